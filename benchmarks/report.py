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
from benchmarks.timing import load_average

HEADERS = ("name", "value", "unit", "ratio [min-max]", "target", "verdict")
TARGET_HEADERS = ("group", "name", "value", "baseline", "ratio [min-max]", "target", "verdict")
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


def ratio_text(row: Row, verdict: Verdict) -> str:
    """``1.02x [0.97-1.10]`` for a paired row, ``1.02x`` for one compared to a constant."""
    if verdict.ratio is None:
        return ""
    if "spread" not in row:
        return f"{verdict.ratio:.2f}x"
    low, high = row["spread"]
    return f"{verdict.ratio:.2f}x [{low:.2f}-{high:.2f}]"


def verdict_text(verdict: Verdict) -> str:
    """ "met", or "MISSED by 12%, +0.41 us/row" (the measured cost of the miss)."""
    return f"{verdict.text}, {verdict.cost}" if verdict.cost else verdict.text


def _cells(row: Row, verdict: Verdict) -> tuple[str, ...]:
    text = verdict_text(verdict) or row.get("note", "")
    if verdict.text and row.get("note"):
        text = f"{text}; {row['note']}"
    ratio = ratio_text(row, verdict)
    return (row["name"], _number(row["value"]), row["unit"], ratio, _target(row), text)


def load_text(rows: Sequence[Row]) -> str:
    """The load range and round count of a group's paired rows ("" when none were paired)."""
    loads = [bound for row in rows for bound in row.get("load", [])]
    rounds = max((row.get("rounds", 0) for row in rows), default=0)
    if not loads:
        return ""
    return f"{rounds} interleaved rounds, load average {min(loads):.2f}-{max(loads):.2f}"


def target_rows(rows: Sequence[Row]) -> list[tuple[Row, Verdict]]:
    """Every row that has a target, judged within its group, in report order."""
    found = []
    for members in groups(rows).values():
        found += [(row, judge(row, members)) for row in members if row["target"] is not None]
    return found


def target_cells(row: Row, verdict: Verdict) -> tuple[str, ...]:
    value = f"{_number(row['value'])} {row['unit']}"
    text = verdict_text(verdict) or row.get("note", "not measured")
    return (row["group"], row["name"], value, row["baseline"] or "", ratio_text(row, verdict),
            _target(row), text)  # fmt: skip


def group_table(rows: list[Row]) -> list[tuple[str, ...]]:
    """The cells of one group's table (without headers)."""
    return [_cells(row, judge(row, rows)) for row in rows]


def format_text(rows: Sequence[Row]) -> str:
    """One aligned plain-text table per group, for the terminal."""
    out: list[str] = []
    for name, members in groups(rows).items():
        body = group_table(members)
        widths = [max(len(line[i]) for line in [HEADERS, *body]) for i in range(len(HEADERS))]
        load = load_text(members)
        out.append(f"\n== {name} ==" + (f" ({load})" if load else ""))
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
        "load_average": load_average(),
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
        f"{env['system']}, {env['cpus']} CPUs{', quick mode' if quick else ''}, load average "
        f"{env['load_average']:.2f} at the end. Every ratio is the median of paired ratios "
        "[min-max]: each round measures every subject once, the order alternating, and the ratio "
        "is taken within the round; values are medians over the rounds.",
        "",
        "| module | status | seconds | reason |",
        "|---|---|---|---|",
    ]
    for status in statuses:
        reason = status.reason.replace("|", "\\|")
        lines.append(f"| {status.module} | {status.status} | {status.seconds:.1f} | {reason} |")
    lines += ["", "## Targets", "", header_line(TARGET_HEADERS)]
    lines += [table_line(target_cells(row, verdict)) for row, verdict in target_rows(rows)]
    if chart:
        lines += ["", f"![ratios against the baselines]({chart})"]
    for name, members in groups(rows).items():
        load = load_text(members)
        lines += ["", f"## {name}", *(["", load] if load else []), "", header_line(HEADERS)]
        lines += [table_line(cells) for cells in group_table(members)]
    return "\n".join(lines) + "\n"


def header_line(headers: Sequence[str]) -> str:
    return table_line(headers) + "\n" + "|---" * len(headers) + "|"


def table_line(cells: Sequence[str]) -> str:
    """One markdown table line; a ``|`` inside a cell is escaped."""
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


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
