"""``run_comparison``: fill equal tables by every strategy and path, measure, report."""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from idfields.compare.backends import Backend, PostgresBackend, connect
from idfields.compare.ids import Strategy, strategies
from idfields.compare.report import Report, write_outputs

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
) -> Report:
    """Compare AUTO_INCREMENT, app-side and DB-side k-sorted IDs and UUIDs on one database.

    Without ``database_url`` an SQLite file in a temporary directory is used (no server).
    ``out_dir`` gets ``compare.json`` and ``compare.png``.
    """
    if rows < 10:
        raise ValueError(f"rows={rows} is too few to measure; use at least 10")
    with tempfile.TemporaryDirectory(prefix="idfields-compare-") as scratch:
        backend = connect(database_url, scratch)
        try:
            report = _measure(backend, rows, progress)
        finally:
            backend.close()
    if out_dir is not None:
        write_outputs(report, Path(out_dir))
    return report


def _measure(backend: Backend, rows: int, progress: bool) -> Report:
    chosen = strategies(backend.vendor, isinstance(backend, PostgresBackend) and backend.db_side)
    plan = [(strategy, path) for strategy in chosen for path in applicable(backend, strategy)]
    report = Report(
        backend.vendor, rows, [s.name for s in chosen], {s.name: s.label for s in chosen}
    )
    if isinstance(backend, PostgresBackend) and not backend.db_side:
        report.notes.append(
            "snowflake (PL/pgSQL) skipped: idfields.next_snowflake() is not installed and "
            "public.idfields_node_lease is missing; run the idfields migrations first"
        )
    if isinstance(backend, PostgresBackend):
        report.notes.append("WAL bytes are cluster-wide: other sessions' writes count too")
    _warm_up(backend, chosen[0], min(rows, 1000))
    with _progress(len(plan), progress) as advance:
        for strategy, path in plan:
            table = f"idfields_cmp_{strategy.name}"
            backend.create(table, strategy)
            wal = backend.wal_position() if isinstance(backend, PostgresBackend) else None
            started = time.perf_counter()
            backend.insert(path, table, strategy, rows)
            seconds = time.perf_counter() - started
            report.add_timing(strategy.name, path, rows / seconds)
            if path == "batch":
                metrics = backend.metrics(table, strategy)
                if wal is not None and isinstance(backend, PostgresBackend):
                    metrics["wal_bytes"] = backend.wal_since(wal)
                # "Rows of the last hour", scaled to the run: the newest tenth of the rows.
                metrics["range_query_s"], metrics["range_query_rows"] = backend.range_query(
                    table, strategy, rows - rows // 10
                )
                report.metrics[strategy.name] = metrics
            backend.drop(table)
            advance(f"{strategy.name} {path}")
    return report


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
