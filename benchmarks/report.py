"""Turn benchmark rows into tables (terminal and markdown), a JSON file and a ratio chart."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.rows import Row, Verdict, check_rows, judge

HEADERS = ("name", "value", "unit", "ratio", "target", "verdict")
_COLORS = {True: "tab:green", False: "tab:red", None: "tab:gray"}  # by Verdict.met


@dataclass(frozen=True)
class ModuleStatus:
    """How one benchmark module ended: "ok", "skipped" or "failed", and why."""

    module: str
    status: str
    reason: str
    seconds: float


def groups(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """Rows by group, in the order groups first appear."""
    grouped: dict[str, list[Row]] = {}
    for row in rows:
        grouped.setdefault(row["group"], []).append(row)
    return grouped


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) >= 1 else f"{value:.3g}"


def _target(row: Row) -> str:
    if row["target"] is None:
        return ""
    return f"{'>=' if row.get('higher_is_better', False) else '<='} {row['target']:.2f}x"


def _cells(row: Row, verdict: Verdict) -> tuple[str, ...]:
    text = verdict.text or row.get("note", "")
    if verdict.text and row.get("note"):
        text = f"{text}; {row['note']}"
    ratio = "" if verdict.ratio is None else f"{verdict.ratio:.2f}x"
    return (row["name"], _number(row["value"]), row["unit"], ratio, _target(row), text)


def group_table(rows: list[Row]) -> list[tuple[str, ...]]:
    """The cells of one group's table (without headers)."""
    return [_cells(row, judge(row, rows)) for row in rows]


def format_text(rows: Sequence[Row]) -> str:
    """One aligned plain-text table per group, for the terminal."""
    out: list[str] = []
    for name, members in groups(rows).items():
        body = group_table(members)
        widths = [max(len(line[i]) for line in [HEADERS, *body]) for i in range(len(HEADERS))]
        out.append(f"\n== {name} ==")
        for line in [HEADERS, *body]:
            out.append(
                "  ".join(
                    cell.ljust(width) for cell, width in zip(line, widths, strict=True)
                ).rstrip()
            )
    return "\n".join(out)


def _environment() -> dict[str, Any]:
    return {
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "system": platform.platform(),
        "cpus": os.cpu_count(),
    }


def format_markdown(
    rows: Sequence[Row], statuses: Sequence[ModuleStatus], *, quick: bool, chart: str | None
) -> str:
    """The report: environment, module statuses, then one table per group."""
    env = _environment()
    lines = [
        "# idfields benchmark report",
        "",
        f"{env['generated']}, Python {env['python']} ({env['implementation']}) on "
        f"{env['system']}, {env['cpus']} CPUs{', quick mode' if quick else ''}. Every ratio "
        "compares two figures measured in this run; times are the best of several repeats.",
        "",
        "| module | status | seconds | reason |",
        "|---|---|---|---|",
    ]
    for status in statuses:
        reason = status.reason.replace("|", "\\|")
        lines.append(f"| {status.module} | {status.status} | {status.seconds:.1f} | {reason} |")
    if chart:
        lines += ["", f"![ratios against the baselines]({chart})"]
    for name, members in groups(rows).items():
        lines += ["", f"## {name}", "", "| " + " | ".join(HEADERS) + " |", "|---" * 6 + "|"]
        for cells in group_table(members):
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def as_json(rows: Sequence[Row], statuses: Sequence[ModuleStatus], *, quick: bool) -> str:
    judged = []
    for members in groups(rows).values():
        judged += [{**row, **judge(row, members).as_dict()} for row in members]
    document = {
        "environment": _environment(),
        "quick": quick,
        "modules": [asdict(status) for status in statuses],
        "rows": judged,
    }
    return json.dumps(document, indent=2)


def write_chart(rows: Sequence[Row], path: Path) -> bool:
    """A bar chart of every ratio per group, with the target marked; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    panels = []
    for name, members in groups(rows).items():
        bars = [(row, judge(row, members)) for row in members]
        bars = [(row, verdict) for row, verdict in bars if verdict.ratio is not None]
        if bars:
            panels.append((name, bars))
    if not panels:
        return False
    heights = [0.6 + 0.35 * len(bars) for _, bars in panels]
    figure, axes = plt.subplots(
        len(panels), 1, figsize=(9, sum(heights) + 0.5), squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )  # fmt: skip
    for axis, (name, bars) in zip(axes[:, 0], panels, strict=True):
        colors = [_COLORS[verdict.met] for _, verdict in bars]
        labels = [row["name"] for row, _ in bars]
        axis.barh(labels, [verdict.ratio or 0.0 for _, verdict in bars], color=colors)
        for index, (row, _) in enumerate(bars):
            if row["target"] is not None:
                axis.plot([row["target"]] * 2, [index - 0.4, index + 0.4], color="black")
        axis.axvline(1.0, color="gray", linewidth=0.5)
        axis.invert_yaxis()
        axis.set_title(f"{name}: ratio to baseline (black: target)", fontsize=9)
        axis.tick_params(labelsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def write_report(
    out: Path, rows: Sequence[Row], statuses: Sequence[ModuleStatus], *, quick: bool
) -> list[Path]:
    """Write report.md, report.json and (with matplotlib) ratios.png into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    chart = out / "ratios.png"
    if write_chart(rows, chart):
        written.append(chart)
    markdown = out / "report.md"
    markdown.write_text(
        format_markdown(rows, statuses, quick=quick, chart=chart.name if written else None)
    )
    data = out / "report.json"
    data.write_text(as_json(rows, statuses, quick=quick) + "\n")
    return [markdown, data, *written]


def run_alone(run: Callable[..., list[Row]], argv: Sequence[str] | None = None) -> None:
    """What a benchmark module does under ``python -m benchmarks.bench_x [--quick]``."""
    parser = argparse.ArgumentParser(description=run.__module__)
    parser.add_argument("--quick", action="store_true", help="shorter runs, rougher numbers")
    args = parser.parse_args(argv)
    print(format_text(check_rows(run(quick=args.quick))))
    sys.stdout.flush()
