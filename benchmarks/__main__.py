"""``python -m benchmarks [--quick] [--only NAME ...] [--out DIR]``: run every benchmark module.

Each ``benchmarks/bench_*.py`` runs in turn; one that cannot run here (missing import, server
down) is reported as skipped with its reason, one that breaks as failed, and the rest still run.
The exit status is 1 when a module failed, else 0: a missed target is a finding, not a crash.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import benchmarks
from benchmarks import Skip
from benchmarks.report import ModuleStatus, format_text, write_report
from benchmarks.rows import Row, check_rows

_OUR_PACKAGES = {"idfields", "benchmarks", "tests"}
# Exception class names that mean "the server is not there", across the drivers we use.
_UNREACHABLE = {"OperationalError", "ConnectionError", "InterfaceError"}


def discover() -> list[str]:
    """The benchmark modules (names without the package), sorted."""
    found = pkgutil.iter_modules(benchmarks.__path__)
    return sorted(info.name for info in found if info.name.startswith("bench_"))


def _skip_reason(error: BaseException) -> str | None:
    """Why ``error`` means "cannot run here" rather than a bug; None for a bug."""
    if isinstance(error, Skip):
        return str(error)
    if isinstance(error, ModuleNotFoundError):
        if (error.name or "").partition(".")[0] in _OUR_PACKAGES:
            return None  # our own code is broken, not a peer missing
        return f"{error.name} is not installed (.venv/bin/pip install -e '.[bench]')"
    names = {cls.__name__ for cls in type(error).__mro__}
    if isinstance(error, OSError) or names & _UNREACHABLE:
        return f"server unavailable: {type(error).__name__}: {error}".strip()
    return None


def run_module(name: str, quick: bool) -> tuple[list[Row], ModuleStatus]:
    """Import and run one module; never raises for the module's own errors."""
    started = time.perf_counter()
    rows: list[Row] = []
    try:
        module: ModuleType = importlib.import_module(f"benchmarks.{name}")
        run = getattr(module, "run", None)
        if not callable(run):
            raise TypeError(f"benchmarks/{name}.py has no run(quick: bool = False) function")
        rows = check_rows(run(quick=quick))
        status, reason = "ok", f"{len(rows)} rows"
    except Exception as error:
        skip = _skip_reason(error)
        if skip is not None:
            status, reason = "skipped", skip
        else:
            status, reason = "failed", f"{type(error).__name__}: {error}"
            traceback.print_exc()
    return rows, ModuleStatus(name, status, reason, time.perf_counter() - started)


def _select(available: list[str], only: Sequence[str]) -> list[str]:
    chosen = []
    for wanted in only:
        name = wanted if wanted.startswith("bench_") else f"bench_{wanted}"
        if name not in available:
            names = ", ".join(module.removeprefix("bench_") for module in available)
            raise ValueError(f"unknown benchmark {wanted!r}; available: {names}")
        chosen.append(name)
    return chosen or available


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter runs, rougher numbers")
    parser.add_argument(
        "--only", nargs="+", default=[], metavar="NAME", help="run only these (e.g. generator)"
    )
    parser.add_argument("--out", type=Path, help="write report.md, report.json (and a chart)")
    args = parser.parse_args(argv)
    try:
        selected = _select(discover(), args.only)
    except ValueError as error:
        parser.error(str(error))
    rows: list[Row] = []
    statuses: list[ModuleStatus] = []
    for name in selected:
        print(f"running {name}{' (quick)' if args.quick else ''} ...", file=sys.stderr, flush=True)
        module_rows, status = run_module(name, args.quick)
        rows += module_rows
        statuses.append(status)
        print(f"  {status.status} in {status.seconds:.1f} s: {status.reason}", file=sys.stderr)
    print(format_text(rows))
    for status in statuses:
        if status.status != "ok":
            print(f"\n{status.module}: {status.status}: {status.reason}")
    if args.out is not None:
        for path in write_report(args.out, rows, statuses, quick=args.quick):
            print(f"wrote {path}")
    return 1 if any(status.status == "failed" for status in statuses) else 0


if __name__ == "__main__":
    sys.exit(main())
