"""The comparison's result: a terminal table, a JSON file and a one-glance PNG chart.

Each (strategy, path) is timed ``repeat`` times, interleaved with the others, so a moment of
noise hits every strategy alike. A rate is shown as its median and its spread (the lowest to
the highest run, relative to the median); a ratio to the baseline whose ranges overlap the
baseline's is marked a tie: the runs cannot tell the two apart.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

METRICS = (
    ("pk_index_bytes", "PK index", "bytes"),
    ("leaf_density", "leaf density", "ratio"),
    ("table_bytes", "table", "bytes"),
    ("wal_bytes", "WAL", "bytes"),
    ("correlation", "order corr.", "ratio"),
    ("range_query_s", "recent rows query", "s"),
)

# What each chart panel measures, printed under it (and in the README).
CAPTIONS = {
    "speed": "rows/s of batched INSERTs (executemany, 1,000 a batch) over the baseline's; bar: "
    "median of the runs, whisker: slowest to fastest run; 'tie': within the baseline's spread",
    "index": "bytes of the primary key's b-tree after the batch insert; on SQLite and MariaDB "
    "every table is clustered on its key, so this is the whole table for every strategy",
    "order": "how closely key order follows insert order (1: appends at the right edge of the "
    "index, 0: lands anywhere, as UUIDv4 does)",
    "recent": "the newest tenth of the rows: an id range for time-ordered keys, a scan of "
    "created_us for the others (which would need a second index on it)",
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

    def overlaps(self, other: Rate) -> bool:
        return min(self.runs) <= max(other.runs) and min(other.runs) <= max(self.runs)


@dataclass
class Report:
    """Rows/s per (strategy, path) and metrics per strategy; the first strategy is the baseline."""

    database: str
    rows: int
    strategies: list[str]
    labels: dict[str, str]
    repeat: int = 1
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
        """Whether the runs of ``strategy`` and the baseline overlap (not for the baseline)."""
        base, mine = self.rate(self.baseline, path), self.rate(strategy, path)
        if strategy == self.baseline or base is None or mine is None:
            return False
        return mine.overlaps(base)

    def to_dict(self) -> dict[str, Any]:
        return {
            "database": self.database,
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
                        for key in [m[0] for m in METRICS] + ["range_query_rows"]
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
        f"idfields compare: {document['rows']:,} rows on {document['database']}, "
        f"median of {document['repeat']} interleaved runs"
    )


def _notes(document: dict[str, Any]) -> list[str]:
    return [
        "rows/s: median of the runs ± half their slowest-to-fastest range; (x) is the ratio to "
        "the baseline's median, 'tie' where the two strategies' runs overlap",
        *document["notes"],
    ]


def table_cells(document: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the table ("n/a" where the database cannot tell) from ``to_dict()``."""
    entries = document["strategies"]
    paths = list(dict.fromkeys(path for entry in entries for path in entry["inserts"]))
    header = ["strategy", *(f"{p} rows/s (x)" for p in paths), *(m[1] for m in METRICS)]
    body = []
    for entry in entries:
        row = [entry["label"]]
        for path in paths:
            insert = entry["inserts"].get(path)
            row.append("-" if insert is None else _show_rate(insert))
        row += [_show(entry["metrics"].get(key), unit) for key, _, unit in METRICS]
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
    return f"{value:.3f}"


def check_out_dir(out_dir: Path) -> None:
    """Fail before the run, in one line, when ``out_dir`` cannot receive the JSON and chart."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ValueError(
            "--out draws compare.png with matplotlib, which is not installed: "
            "pip install 'idfields[compare]' (or leave out --out)"
        ) from None
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / ".idfields-compare-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise ValueError(
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


def _chart(report: Report, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = report.strategies
    labels = [report.labels[name] for name in names]
    colors = ["#888888" if n == report.baseline else "#1f77b4" for n in names]
    metric = {key: [report.metrics.get(n, {}).get(key) for n in names] for key, _, _ in METRICS}
    panels: list[tuple[str, str, list[float | None]]] = [
        (
            "batch insert speed vs baseline (x, higher is better)",
            "speed",
            [report.ratio(name, "batch") for name in names],
        ),
        (
            "primary-key b-tree size (KiB, lower is better)",
            "index",
            [None if v is None else v / 1024 for v in metric["pk_index_bytes"]],
        ),
        (
            "key order vs insert order (correlation, 1 = append-only)",
            "order",
            metric["correlation"],
        ),
        (
            "'recent rows' query (ms, lower is better)",
            "recent",
            [None if v is None else v * 1000 for v in metric["range_query_s"]],
        ),
    ]
    figure, axes = plt.subplots(2, 2, figsize=(14, 9), constrained_layout=True)
    for axis, (title, caption, values) in zip(axes.flat, panels, strict=True):
        shown = [0.0 if v is None else float(v) for v in values]
        bars = axis.barh(labels, shown, color=colors)
        axis.invert_yaxis()
        axis.set_title(title, fontsize=11)
        axis.set_xlabel(_wrap(CAPTIONS[caption]), fontsize=8, loc="left")
        texts = ["n/a" if v is None else f"{v:,.2f}" for v in values]
        ends = [bar.get_width() for bar in bars]
        if caption == "speed":
            _whiskers(axis, report, bars, texts, ends)
        for bar, text, end in zip(bars, texts, ends, strict=True):
            axis.annotate(
                text,
                (end, bar.get_y() + bar.get_height() / 2),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=9,
            )
        axis.margins(x=0.25)
    figure.suptitle(
        f"{_title(report.to_dict())} (grey: {report.labels[report.baseline]})", fontsize=13
    )
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _whiskers(axis: Any, report: Report, bars: Any, texts: list[str], ends: list[float]) -> None:
    """Slowest-to-fastest run of each strategy as a line over its bar; ties say so."""
    for index, (name, bar) in enumerate(zip(report.strategies, bars, strict=True)):
        span = report.ratio_range(name, "batch")
        if span is None:
            continue
        middle = bar.get_y() + bar.get_height() / 2
        axis.plot(span, [middle, middle], color="black", linewidth=1.2)
        ends[index] = max(ends[index], span[1])
        if report.tie(name, "batch"):
            texts[index] += " (tie)"


def _wrap(text: str, width: int = 80) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))
