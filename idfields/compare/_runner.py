"""``run_comparison``: fill equal tables by every strategy and path, measure, report."""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from idfields.compare._backends import Backend, PostgresBackend, connect
from idfields.compare._ids import Strategy, strategies
from idfields.compare._report import RANGE, SCAN, Report, check_out_dir, write_outputs
from idfields.errors import InvalidArgument

Advance = Callable[[str], None]


def applicable(backend: Backend, strategy: Strategy) -> list[str]:
    """The insert paths that matter for a strategy on this backend."""
    paths = [p for p in backend.paths if p != "insert_select"]
    made_by_db = strategy.make is None or strategy.name == "uuid4"  # gen_random_uuid()
    if "insert_select" in backend.paths and made_by_db:
        paths.append("insert_select")
    # "batch" runs last: its table is the one measured.
    return sorted(paths, key=lambda path: path == "batch")


def run_comparison(
    database_url: str | None = None,
    rows: int = 10_000,
    out_dir: str | Path | None = None,
    progress: bool = True,
    repeat: int = 3,
) -> Report:
    """Compare AUTO_INCREMENT, app-side and DB-side k-sorted IDs and UUIDs on one database.

    Without ``database_url`` an SQLite file in a temporary directory is used (no server).
    Each strategy and path runs ``repeat`` times, interleaved with the others. ``out_dir`` gets
    ``compare.json`` and ``compare.png``; it is checked before the run, so a bad one costs
    nothing. Everything made in the database is removed again.
    """
    if rows < 10:
        raise InvalidArgument(f"rows={rows} is too few to measure; use at least 10")
    if repeat < 1:
        raise InvalidArgument(f"repeat={repeat}: each strategy must run at least once")
    if out_dir is not None:
        check_out_dir(Path(out_dir))
    with tempfile.TemporaryDirectory(prefix="idfields-compare-") as scratch:
        backend = connect(database_url, scratch)
        try:
            report = _measure(backend, rows, progress, repeat)
        finally:
            backend.close()
    if out_dir is not None:
        write_outputs(report, Path(out_dir))
    return report


def _measure(backend: Backend, rows: int, progress: bool, repeat: int) -> Report:
    postgres = backend if isinstance(backend, PostgresBackend) else None
    chosen = strategies(backend.vendor, postgres is not None and postgres.db_side)
    plan = [(strategy, path) for strategy in chosen for path in applicable(backend, strategy)]
    report = Report(
        backend.vendor,
        rows,
        [s.name for s in chosen],
        {s.name: s.label for s in chosen},
        repeat,
        product=backend.product(),
    )
    if postgres is not None and postgres.db_side_error is not None:
        report.notes.append(
            "snowflake (PL/pgSQL) skipped: its functions could not be installed in the scratch "
            f"schema: {postgres.db_side_error}"
        )
    if postgres is not None:
        report.notes.append("WAL bytes are cluster-wide: other sessions' writes count too")
    _warm_up(backend, chosen[0], min(rows, 1000))
    with _progress(len(plan) * repeat, progress) as advance:
        for round_ in range(repeat):
            # Interleaved, and each round starts elsewhere: no strategy always goes first.
            shift = round_ * len(plan) // repeat
            for strategy, path in plan[shift:] + plan[:shift]:
                _run_one(backend, report, strategy, path, measure=round_ == 0 and path == "batch")
                advance(f"{strategy.name} {path} ({round_ + 1}/{repeat})")
    return report


def _run_one(
    backend: Backend, report: Report, strategy: Strategy, path: str, measure: bool
) -> None:
    """Time one insert of ``report.rows`` rows into a fresh table; sizes from the first batch."""
    table = f"idfields_cmp_{strategy.name}"
    rows = report.rows
    backend.create(table, strategy)
    postgres = backend if isinstance(backend, PostgresBackend) else None
    wal = postgres.wal_position() if postgres is not None else None
    started = time.perf_counter()
    backend.insert(path, table, strategy, rows)
    report.add_timing(strategy.name, path, rows / (time.perf_counter() - started))
    if measure:
        metrics = backend.metrics(table, strategy)
        if wal is not None and postgres is not None:
            metrics["wal_bytes"] = postgres.wal_since(wal)
        # "Rows of the last hour", scaled to the run: the newest tenth of the rows.
        metrics["range_query_s"], metrics["range_query_rows"] = backend.range_query(
            table, strategy, rows - rows // 10
        )
        metrics["range_query_by"] = RANGE if strategy.time_leading else SCAN
        report.metrics[strategy.name] = metrics
    backend.drop(table)


def _warm_up(backend: Backend, strategy: Strategy, rows: int) -> None:
    """One untimed round, so the first timed strategy does not pay for cold caches."""
    backend.create("idfields_cmp_warm_up", strategy)
    backend.insert("batch", "idfields_cmp_warm_up", strategy, rows)
    backend.drop("idfields_cmp_warm_up")


@contextmanager
def _progress(total: int, enabled: bool) -> Iterator[Advance]:
    """A rich progress bar when rich is installed, else one rewritten stderr line."""
    if not enabled:
        yield lambda label: None
        return
    try:
        from rich.progress import Progress
    except ImportError:
        done = [0]

        def line(label: str) -> None:
            done[0] += 1
            sys.stderr.write(f"\rcompare: {done[0]}/{total} {label:<40}")
            sys.stderr.flush()

        yield line
        sys.stderr.write("\n")
        return
    with Progress(transient=True) as bar:
        task = bar.add_task("comparing", total=total)
        yield lambda label: bar.update(task, advance=1, description=label)
