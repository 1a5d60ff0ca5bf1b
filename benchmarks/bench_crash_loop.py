"""A crash-looping fleet on PostgreSQL: restarts per second sustained, with zero duplicates
and no live lease ever taken.

Workers lease a snowflake node (3 s leases), issue IDs and are SIGKILLed once they have (see
``benchmarks.crash_loop``). Paired rounds run the same loop with bare workers that only connect
and run one query: the rate this machine sustains for forking, connecting and killing alone, so
the report shows what a claim adds to a restart. The target is 100 restarts per second without a
restart finding no node; ``make bench`` runs 3 rounds of 600 restarts each (the quick mode 1 of
40); the 10-minute figure is ``python -m benchmarks.crash_loop URL --rate 100 --seconds 600``.

A killed worker's node comes back only when its lease ends (a second earlier once it is proven
dead), so the node space absorbs a bounded restart rate. That rate is measured where this
machine can reach it: a 16-node layout crash-looped faster than it absorbs; the restarts that
found a node after the first 16, per second, scaled to 1,024 nodes.

The fleet leases from idfields tables in a schema of its own, dropped afterwards: its killed
workers' leases stay live for their ttl, and on the shared tables they would leave the modules
after this one (the database-side functions, which cannot tell a dead app process from a live
one) no node to claim.
"""

from __future__ import annotations

from sqlalchemy import Engine, create_engine

from benchmarks.crash_loop import CrashLoopResult
from benchmarks.crash_loop import run as crash_loop
from benchmarks.report import run_alone
from benchmarks.rows import Row, make_row
from benchmarks.servers import sqlalchemy_url
from benchmarks.timing import measured_row, paired
from idfields import Layout, Node, Sequence, Timestamp
from idfields.layouts import SNOWFLAKE_EPOCH
from idfields.sqlalchemy_ext._coordination import SQLAlchemyDatabase
from idfields.sqlalchemy_ext._tables import metadata

GROUP = "crash loop (PostgreSQL, snowflake, 8 workers alive)"
TARGET_RATE = 100.0
IDFIELDS, BARE = "restarts sustained", "bare restarts (connect, one query)"
TTL_S = 3.0
PROBE_NODES = 16
PROBE = Layout(
    "bench_crash_probe",
    [Timestamp(41, unit="ms", epoch=SNOWFLAKE_EPOCH), Node(4), Sequence(12)],
)


SCHEMA = "idfields_bench_crash_loop"


def _fleet_engine(url: str) -> Engine:
    """An engine whose sessions find only the fleet's own idfields tables."""
    return create_engine(url, connect_args={"options": f"-c search_path={SCHEMA}"})


def _schema(url: str, *statements: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        for statement in statements:
            conn.exec_driver_sql(statement.format(schema=SCHEMA))
    engine.dispose()


def run(quick: bool = False) -> list[Row]:
    url = sqlalchemy_url("postgresql")
    _schema(url, "DROP SCHEMA IF EXISTS {schema} CASCADE", "CREATE SCHEMA {schema}")
    try:
        metadata.create_all(_fleet_engine(url))
        return _rows(url, quick)
    finally:
        _schema(url, "DROP SCHEMA {schema} CASCADE")


def _rows(url: str, quick: bool) -> list[Row]:
    rounds, restarts = (1, 40) if quick else (3, 600)
    results: list[CrashLoopResult] = []

    def measure(name: str) -> float:
        result = crash_loop(
            lambda: SQLAlchemyDatabase(_fleet_engine(url)),
            restarts=restarts,
            rate=TARGET_RATE,
            workers=8,
            ttl_s=TTL_S,
            bare=name == BARE,
        )
        if name == IDFIELDS:
            results.append(result)
        return result.restarts_per_s

    rates = paired([IDFIELDS, BARE], rounds, measure)
    probe = crash_loop(
        lambda: SQLAlchemyDatabase(_fleet_engine(url)),
        PROBE,
        restarts=120 if quick else 400,
        rate=40.0,
        workers=2,
        ttl_s=TTL_S,
    )
    results.append(probe)
    found = probe.restarts - probe.no_node - PROBE_NODES  # after the never-used nodes
    absorbed = max(found, 0) / probe.seconds * 1024 / PROBE_NODES
    no_node = sum(result.no_node for result in results[:-1])
    duplicates = sum(result.duplicates for result in results)
    live_taken = sum(result.live_taken for result in results)
    ids = sum(result.ids for result in results)
    note = (
        f"{rounds} rounds of {restarts:,} SIGKILL restarts at up to {TARGET_RATE:g}/s, "
        f"{TTL_S:g} s leases: {no_node} found no node, {duplicates} duplicates in {ids:,} IDs, "
        f"{live_taken} live leases taken; the same loop with bare workers sustains "
        f"{rates.median(BARE):.1f}/s on this machine"
    )
    absorbed_note = (
        f"{PROBE_NODES} nodes crash-looped at 40/s for {probe.seconds:.1f} s ({TTL_S:g} s "
        f"leases, workers reaped): {found} restarts found a node after the first "
        f"{PROBE_NODES}, {probe.no_node} found none; scaled to 1,024 nodes"
    )
    return [
        make_row(GROUP, "target rate", TARGET_RATE, "restarts/s", None),
        make_row(GROUP, BARE, rates.median(BARE), "restarts/s", None),
        make_row(
            GROUP,
            IDFIELDS,
            rates.median(IDFIELDS),
            "restarts/s",
            "target rate",
            1.0,
            higher_is_better=True,
            note=note,
        ),
        measured_row(
            GROUP,
            f"{IDFIELDS} vs the machine's floor",
            "restarts/s",
            rates,
            BARE,
            higher_is_better=True,
            value_of=IDFIELDS,
        ),
        make_row(GROUP, "duplicate IDs", float(duplicates), "ids", None, note=note),
        make_row(GROUP, "live leases taken", float(live_taken), "claims", None, note=note),
        make_row(GROUP, "restarts that found no node", float(no_node), "restarts", None),
        make_row(
            GROUP,
            "restart rate 1,024 nodes absorb",
            absorbed,
            "restarts/s",
            None,
            higher_is_better=True,
            note=absorbed_note,
        ),
    ]


if __name__ == "__main__":
    run_alone(run)
