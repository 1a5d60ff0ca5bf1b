"""The comparison's result: a terminal table, a JSON file and a one-glance PNG chart."""

from __future__ import annotations

import json
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


@dataclass
class Report:
    """Rows/s per (strategy, path) and metrics per strategy; the first strategy is the baseline."""

    database: str
    rows: int
    strategies: list[str]
    labels: dict[str, str]
    rates: dict[str, dict[str, float]] = field(default_factory=dict)
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def baseline(self) -> str:
        return self.strategies[0]

    def add_timing(self, strategy: str, path: str, rows_per_s: float) -> None:
        self.rates.setdefault(strategy, {})[path] = rows_per_s

    def ratio(self, strategy: str, path: str) -> float | None:
        """Rows/s relative to the AUTO_INCREMENT baseline on the same path (> 1: faster)."""
        base = self.rates.get(self.baseline, {}).get(path)
        mine = self.rates.get(strategy, {}).get(path)
        return None if base is None or mine is None else mine / base

    def to_dict(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "rows": self.rows,
            "baseline": self.baseline,
            "notes": self.notes,
            "strategies": [
                {
                    "name": name,
                    "label": self.labels[name],
                    "inserts": {
                        path: {"rows_per_s": rate, "ratio_to_baseline": self.ratio(name, path)}
                        for path, rate in self.rates.get(name, {}).items()
                    },
                    "metrics": {
                        key: self.metrics.get(name, {}).get(key)
                        for key in [m[0] for m in METRICS] + ["range_query_rows"]
                    },
                }
                for name in self.strategies
            ],
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
        table = Table(title=f"idfields compare: {self.rows:,} rows on {self.database}")
        for column in header:
            table.add_column(column, justify="left" if column == "strategy" else "right")
        for line in body:
            table.add_row(*line)
        console = Console(width=max(Console().width, 180))
        console.print(table)
        for note in self.notes:
            console.print(f"note: {note}")


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
            row.append(
                "-"
                if insert is None
                else f"{insert['rows_per_s']:,.0f} ({insert['ratio_to_baseline']:.2f}x)"
            )
        row += [_show(entry["metrics"].get(key), unit) for key, _, unit in METRICS]
        body.append(row)
    return header, body


def text_table(document: dict[str, Any]) -> str:
    """The table as aligned plain text, with the notes under it."""
    header, body = table_cells(document)
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in [header, *body]
    ]
    return "\n".join([*lines, *(f"note: {note}" for note in document["notes"])])


def _show(value: Any, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "bytes":
        return f"{value / 1024:,.0f} KiB"
    if unit == "s":
        return f"{value * 1000:.2f} ms"
    return f"{value:.3f}"


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

    labels = [report.labels[name] for name in report.strategies]
    colors = ["#888888" if n == report.baseline else "#1f77b4" for n in report.strategies]
    panels: list[tuple[str, list[float | None]]] = [
        (
            "batch insert speed vs baseline (x, higher is better)",
            [report.ratio(name, "batch") for name in report.strategies],
        ),
        (
            "primary-key index size (KiB, lower is better)",
            [_kib(report.metrics.get(n, {}).get("pk_index_bytes")) for n in report.strategies],
        ),
        (
            "key order vs insert order (correlation, 1 = append-only)",
            [report.metrics.get(n, {}).get("correlation") for n in report.strategies],
        ),
        (
            "'recent rows' query (ms, lower is better)",
            [_ms(report.metrics.get(n, {}).get("range_query_s")) for n in report.strategies],
        ),
    ]
    figure, axes = plt.subplots(2, 2, figsize=(13, 8), constrained_layout=True)
    for axis, (title, values) in zip(axes.flat, panels, strict=True):
        shown = [0.0 if v is None else float(v) for v in values]
        bars = axis.barh(labels, shown, color=colors)
        axis.invert_yaxis()
        axis.set_title(title, fontsize=11)
        for bar, value in zip(bars, values, strict=True):
            text = "n/a" if value is None else f"{value:,.2f}"
            axis.annotate(
                text,
                (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=9,
            )
        axis.margins(x=0.2)
    figure.suptitle(
        f"idfields compare: {report.rows:,} rows on {report.database} "
        f"(grey: {report.labels[report.baseline]})",
        fontsize=13,
    )
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _kib(value: Any) -> float | None:
    return None if value is None else value / 1024


def _ms(value: Any) -> float | None:
    return None if value is None else value * 1000
