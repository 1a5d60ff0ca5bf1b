"""The comparison's result: a terminal table, a JSON file and a one-glance PNG chart.

Each (strategy, path) is timed ``repeat`` times, interleaved with the others, so a moment of
noise hits every strategy alike. A rate is shown as its median and its spread (the lowest to
the highest run, relative to the median); a ratio to the baseline whose ranges overlap the
baseline's is marked a tie: each median lies within the other's runs, so the runs cannot tell
the two apart.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from idfields.errors import InvalidArgument

METRICS = (
    ("pk_index_bytes", "PK index", "bytes"),
    ("leaf_density", "leaf density", "ratio"),
    ("table_bytes", "table", "bytes"),
    ("wal_bytes", "WAL", "bytes"),
    ("correlation", "order corr.", "ratio"),
    ("range_query_s", "recent rows query", "s"),
)

# How the "recent rows" query found them, per strategy.
RANGE, SCAN = "id range", "scan"
# The insert paths, as the chart and the table name them.
PATHS = {
    "single": "single-row",
    "batch": "batch",
    "copy": "COPY",
    "insert_select": "INSERT ... SELECT",
}

# What each chart panel measures, printed under it (and in the docs).
CAPTIONS = {
    "speed": "rows/s of each insert path over the baseline's on the same path (single-row "
    "INSERTs, executemany in batches of 1,000, and on PostgreSQL COPY and INSERT ... SELECT); "
    "bar: median of the runs, whisker: slowest to fastest run; 'tie': each median lies "
    "within the other's runs",
    "index": "KiB of the primary key's b-tree after the batch insert; on SQLite and MariaDB "
    "every table is clustered on its key, so this is the whole table for every strategy",
    "order": "how closely key order follows insert order (1: appends at the right edge of the "
    "index, 0: lands anywhere, as UUIDv4 does)",
    "recent": f"the newest tenth of the rows: '{RANGE}' where the key is time-ordered (a range "
    f"of the primary key), '{SCAN}' of created_us for the others (which would need a second "
    "index on it)",
    "wal": "KiB of write-ahead log the batch insert wrote (PostgreSQL only; cluster-wide, so "
    "other sessions' writes count too)",
}


@dataclass(frozen=True)
class Rate:
    """Rows/s of one (strategy, path) over its runs."""

    runs: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def spread(self) -> float:
        """(fastest - slowest) / median: 0.1 means the runs lay within 10% of each other."""
        return (max(self.runs) - min(self.runs)) / self.median

    def covers(self, value: float) -> bool:
        return min(self.runs) <= value <= max(self.runs)

    def ties(self, other: Rate) -> bool:
        """Each median lies within the other's runs: overlapping ranges alone would call a
        0.45x rate a tie whenever one run of either strayed far enough."""
        return self.covers(other.median) and other.covers(self.median)


@dataclass
class Report:
    """Rows/s per (strategy, path) and metrics per strategy; the first strategy is the baseline."""

    database: str
    rows: int
    strategies: list[str]
    labels: dict[str, str]
    repeat: int = 1
    product: str = ""  # the database by its own name and version ("MariaDB 10.11.6")
    runs: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def baseline(self) -> str:
        return self.strategies[0]

    def add_timing(self, strategy: str, path: str, rows_per_s: float) -> None:
        self.runs.setdefault(strategy, {}).setdefault(path, []).append(rows_per_s)

    def rate(self, strategy: str, path: str) -> Rate | None:
        runs = self.runs.get(strategy, {}).get(path)
        return Rate(tuple(runs)) if runs else None

    def ratio(self, strategy: str, path: str) -> float | None:
        """Median rows/s relative to the baseline's on the same path (> 1: faster)."""
        base, mine = self.rate(self.baseline, path), self.rate(strategy, path)
        return None if base is None or mine is None else mine.median / base.median

    def ratio_range(self, strategy: str, path: str) -> tuple[float, float] | None:
        """Slowest and fastest run over the baseline's median."""
        base, mine = self.rate(self.baseline, path), self.rate(strategy, path)
        if base is None or mine is None:
            return None
        return min(mine.runs) / base.median, max(mine.runs) / base.median

    def tie(self, strategy: str, path: str) -> bool:
        """Whether the runs cannot tell ``strategy`` from the baseline (never the baseline)."""
        base, mine = self.rate(self.baseline, path), self.rate(strategy, path)
        if strategy == self.baseline or base is None or mine is None:
            return False
        return mine.ties(base)

    def to_dict(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "product": self.product or self.database,
            "rows": self.rows,
            "repeat": self.repeat,
            "baseline": self.baseline,
            "notes": self.notes,
            "strategies": [
                {
                    "name": name,
                    "label": self.labels[name],
                    "inserts": {
                        path: self._insert(name, path, Rate(tuple(runs)))
                        for path, runs in self.runs.get(name, {}).items()
                    },
                    "metrics": {
                        key: self.metrics.get(name, {}).get(key)
                        for key in [m[0] for m in METRICS] + ["range_query_rows", "range_query_by"]
                    },
                }
                for name in self.strategies
            ],
        }

    def _insert(self, name: str, path: str, rate: Rate) -> dict[str, Any]:
        return {
            "rows_per_s": rate.median,
            "runs": list(rate.runs),
            "spread": rate.spread,
            "ratio_to_baseline": self.ratio(name, path),
            "tie": self.tie(name, path),
        }

    def print(self) -> None:
        """The table on the terminal: rich when installed, else plain text."""
        document = self.to_dict()
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            print(text_table(document))
            return
        header, body = table_cells(document)
        table = Table(title=_title(document))
        for column in header:
            table.add_column(column, justify="left" if column == "strategy" else "right")
        for line in body:
            table.add_row(*line)
        console = Console(width=max(Console().width, 180))
        console.print(table)
        for note in _notes(document):
            console.print(f"note: {note}")


def _title(document: dict[str, Any]) -> str:
    return (
        f"idfields compare: {document['rows']:,} rows on "
        f"{document.get('product') or document['database']}, "
        f"median of {document['repeat']} interleaved runs"
    )


def _notes(document: dict[str, Any]) -> list[str]:
    return [
        "rows/s: median of the runs ± half their slowest-to-fastest range; (x) is the ratio to "
        "the baseline's median, 'tie' where each median lies within the other's runs",
        *document["notes"],
    ]


def table_cells(document: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the table ("n/a" where the database cannot tell) from ``to_dict()``."""
    entries = document["strategies"]
    paths = list(dict.fromkeys(path for entry in entries for path in entry["inserts"]))
    header = [
        "strategy",
        *(f"{PATHS.get(p, p)} rows/s (x)" for p in paths),
        *(m[1] for m in METRICS),
    ]
    body = []
    for entry in entries:
        row = [entry["label"]]
        for path in paths:
            insert = entry["inserts"].get(path)
            row.append("-" if insert is None else _show_rate(insert))
        metrics = entry["metrics"]
        row += [_show(metrics.get(key), unit) for key, _, unit in METRICS]
        if metrics.get("range_query_by") and row[-1] != "n/a":
            row[-1] += f" ({metrics['range_query_by']})"
        body.append(row)
    return header, body


def _show_rate(insert: dict[str, Any]) -> str:
    tie = " tie" if insert["tie"] else ""
    return (
        f"{insert['rows_per_s']:,.0f} ±{insert['spread'] * 50:.0f}% "
        f"({insert['ratio_to_baseline']:.2f}x{tie})"
    )


def text_table(document: dict[str, Any]) -> str:
    """The table as aligned plain text, with the notes under it."""
    header, body = table_cells(document)
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in [header, *body]
    ]
    return "\n".join([_title(document), *lines, *(f"note: {note}" for note in _notes(document))])


def _show(value: Any, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "bytes":
        return f"{value / 1024:,.0f} KiB"
    if unit == "s":
        return f"{value * 1000:.2f} ms"
    return f"{_unsigned_zero(value, 3):.3f}"


def _unsigned_zero(value: float, digits: int) -> float:
    """``value`` rounded, a negative zero made positive: "-0.000" is a zero that looks signed."""
    return round(value, digits) + 0.0


def check_out_dir(out_dir: Path) -> None:
    """Fail before the run, in one line, when ``out_dir`` cannot receive the JSON and chart."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise InvalidArgument(
            "--out draws compare.png with matplotlib, which is not installed: "
            "pip install 'idfields[compare]' (or leave out --out)"
        ) from None
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / ".idfields-compare-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise InvalidArgument(
            f"--out {out_dir} cannot be written ({error.strerror or error}); "
            "give a directory you can write to"
        ) from None


def write_outputs(report: Report, out_dir: Path) -> tuple[Path, Path]:
    """``compare.json`` and ``compare.png`` in ``out_dir`` (created if missing)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "compare.json"
    json_path.write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    png_path = out_dir / "compare.png"
    _chart(report, png_path)
    return json_path, png_path


@dataclass(frozen=True)
class Panel:
    """One chart panel: per series (an insert path, or one measure), a value per strategy."""

    title: str
    caption: str
    series: dict[str, list[float | None]]
    texts: dict[str, list[str]]
    #: Per series, each strategy's slowest-to-fastest run over the baseline's median (speed).
    spans: dict[str, list[tuple[float, float] | None]] = field(default_factory=dict)

    @property
    def measured(self) -> bool:
        return any(v is not None for values in self.series.values() for v in values)


def panels(report: Report) -> list[Panel]:
    """What the chart draws, apart from matplotlib: every insert path's speed (each bar with its
    runs' spread), the key's size, its order, the recent-rows query (saying which strategies
    used an ID range) and WAL; a panel the database measured nothing for is left out."""
    names = report.strategies
    metric = {key: [report.metrics.get(n, {}).get(key) for n in names] for key, _, _ in METRICS}
    paths = [p for p in PATHS if any(p in report.runs.get(n, {}) for n in names)]
    speed = {PATHS[p]: [report.ratio(n, p) for n in names] for p in paths}
    speed_texts = {
        PATHS[p]: [
            _ratio_text(ratio, report.tie(n, p))
            for n, ratio in zip(names, speed[PATHS[p]], strict=True)
        ]
        for p in paths
    }
    kib = [None if v is None else v / 1024 for v in metric["pk_index_bytes"]]
    wal = [None if v is None else v / 1024 for v in metric["wal_bytes"]]
    order = metric["correlation"]
    recent = [None if v is None else v * 1000 for v in metric["range_query_s"]]
    by = [report.metrics.get(n, {}).get("range_query_by") for n in names]
    spans = {PATHS[p]: [report.ratio_range(n, p) for n in names] for p in paths}
    drawn = [
        Panel("insert speed vs baseline (x, higher is better)", "speed", speed, speed_texts, spans),
        Panel(
            "primary-key b-tree size (KiB, lower is better)",
            "index",
            {"size": kib},
            {"size": [_number(v, 0) for v in kib]},
        ),
        Panel(
            "key order vs insert order (correlation, 1 = append-only)",
            "order",
            {"order": order},
            {"order": [_number(v, 2) for v in order]},
        ),
        Panel(
            "'recent rows' query (ms, lower is better)",
            "recent",
            {"recent": recent},
            {
                "recent": [
                    _number(v, 2) + ("" if v is None or how is None else f" ({how})")
                    for v, how in zip(recent, by, strict=True)
                ]
            },
        ),
        Panel(
            "write-ahead log of the batch insert (KiB, lower is better)",
            "wal",
            {"wal": wal},
            {"wal": [_number(v, 0) for v in wal]},
        ),
    ]
    return [panel for panel in drawn if panel.measured]


def verdict(report: Report) -> str:
    """The chart's answer to "which should I use?": the fastest key other than the baseline
    over every insert path measured, its key index against the baseline's, and the keys that
    scatter their inserts over the index."""
    base = report.labels[report.baseline]
    speeds = {
        name: ratios
        for name in report.strategies[1:]
        if (ratios := [r for p in PATHS if (r := report.ratio(name, p)) is not None])
    }
    if not speeds:
        return f"Only {base} was measured: nothing to choose between."
    best = max(speeds, key=lambda name: statistics.geometric_mean(speeds[name]))
    speed = statistics.geometric_mean(speeds[best])
    ties = sum(report.tie(best, p) for p in PATHS)
    base_size, best_size = (
        report.metrics.get(n, {}).get("pk_index_bytes") for n in (report.baseline, best)
    )
    size = (
        f", with a key index {best_size / base_size:.2f}x its size"
        if base_size and best_size
        else ""
    )
    text = (
        f"Which to use: {report.labels[best]} inserts fastest of the keys compared, "
        f"{speed:.2f}x {base} (geometric mean of {len(speeds[best])} insert paths"
        + (f", within the runs' spread on {ties}" if ties else "")
        + ")"
        + size
        + "."
    )
    scattered = [
        report.labels[n]
        for n in report.strategies
        if (corr := report.metrics.get(n, {}).get("correlation")) is not None and corr < 0.5
    ]
    if scattered:
        text += f" {', '.join(scattered)} scatter inserts over the index (key order below 0.5)."
    return text + " A difference inside the whiskers is noise."


def _ratio_text(ratio: float | None, tie: bool) -> str:
    if ratio is None:
        return "n/a"
    return f"{ratio:.2f}x" + (" tie" if tie else "")


def _number(value: float | None, digits: int) -> str:
    if value is None:
        return "n/a"
    return f"{_unsigned_zero(value, digits):,.{digits}f}"


def chart_title(report: Report) -> str:
    """The chart's title: the run on one line, the baseline's colour on the next (labels carry
    parentheses of their own, so none are added around them)."""
    return f"{_title(report.to_dict())}\ngrey bars: {report.labels[report.baseline]}"


def _chart(report: Report, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [report.labels[name] for name in report.strategies]
    shown = panels(report)
    figure, axes = plt.subplots(3, 2, figsize=(15, 13), constrained_layout=True)
    for axis, panel in zip(axes.flat, shown, strict=False):
        _draw(axis, report, panel, labels)
    rest = list(axes.flat)[len(shown) :]
    for axis in rest:
        axis.set_axis_off()
    if rest:
        rest[0].text(0, 1, _wrap(verdict(report), 60), va="top", fontsize=11, wrap=True)
    figure.suptitle(chart_title(report), fontsize=13)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _draw(axis: Any, report: Report, panel: Panel, labels: list[str]) -> None:
    """Horizontal bars, one group per strategy and one bar per series, each with its text."""
    count = len(panel.series)
    height = 0.8 / count
    positions = range(len(labels))
    for index, (series, values) in enumerate(panel.series.items()):
        offsets = [p - 0.4 + height * (index + 0.5) for p in positions]
        shown = [0.0 if v is None else float(v) for v in values]
        colors = [
            "#888888" if name == report.baseline else f"C{index}" for name in report.strategies
        ]
        bars = axis.barh(offsets, shown, height=height, color=colors)
        ends = [bar.get_width() for bar in bars]
        if series in panel.spans:
            _whiskers(axis, panel.spans[series], offsets, ends)
        for offset, text, end in zip(offsets, panel.texts[series], ends, strict=True):
            axis.annotate(
                text, (end, offset), xytext=(3, 0), textcoords="offset points",
                va="center", fontsize=8,
            )  # fmt: skip
    axis.set_yticks(list(positions), labels)
    axis.invert_yaxis()
    axis.set_title(panel.title, fontsize=11)
    axis.set_xlabel(_wrap(CAPTIONS[panel.caption]), fontsize=8, loc="left")
    if count > 1:  # by the series' colour: a legend from the bars would show the baseline's
        from matplotlib.patches import Patch

        handles = [Patch(color=f"C{i}", label=series) for i, series in enumerate(panel.series)]
        axis.legend(handles=handles, fontsize=8, loc="lower right")
    axis.margins(x=0.3)


def _whiskers(
    axis: Any, spans: list[tuple[float, float] | None], offsets: list[float], ends: list[float]
) -> None:
    """Each strategy's slowest-to-fastest run as a capped line over its bar, the text past it."""
    for index, (span, middle) in enumerate(zip(spans, offsets, strict=True)):
        if span is None:
            continue
        axis.errorbar(
            (span[0] + span[1]) / 2, middle, xerr=(span[1] - span[0]) / 2,
            color="black", linewidth=1, capsize=3,
        )  # fmt: skip
        ends[index] = max(ends[index], span[1])


def _wrap(text: str, width: int = 80) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))
