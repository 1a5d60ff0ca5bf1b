"""The coordination database restarts without its recent past, its identity unchanged: a disk
snapshot of the cluster restored (the same system identifier, timeline and database OIDs), or a
crash that lost the WAL of a transaction that rolled back. Live app processes keep what they
claimed before; a process or a database backend claiming afterwards must not take it. Counts IDs
two clients *received*, on a throwaway cluster per test."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from dbapi_database import DbApiDatabase
from psycopg import sql as pgsql

from idfields import NodeError
from idfields.coordination import DecimalSource, LeaseSource, record_launch
from idfields.generators import IdGenerator
from idfields.layouts import DECIMAL
from tests.pg.test_restored_database import issue, process
from tests.pg.throwaway import Cluster, available, started_cluster

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.cluster, available]

TTL_S = 2.0
# A live process's lease outlasts a restore (crash recovery included) on a slow machine.
HOLDER_TTL_S = 5.0
PER_CLAIM = 1000


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """A cluster per test: each restart affects every database of its cluster. The WAL writer
    slowed to 10 s: what a rolled-back transaction wrote reaches the disk only if something
    else flushes it."""
    with started_cluster("restarts", {"wal_writer_delay": "10000"}) as made:
        yield made


def _prepared(
    cluster: Cluster,
    name: str,
    nodes: object = None,
    ttl_s: float = HOLDER_TTL_S,
    ceiling_s: float = 4 * TTL_S,
) -> str:
    """A database with the tables, the functions, the lease ttl ceiling and launch 1, its
    identity and the lease ttl of the deploy recorded by earlier claims, and its server start:
    the state of a live deployment."""
    url = cluster.url(cluster.database(name, nodes=nodes, ttl_ceiling_s=ceiling_s))
    database = DbApiDatabase("postgresql", url)
    try:
        record_launch(database, "v1")
        DecimalSource(database).acquire(DECIMAL)
        with process(LeaseSource(database, ttl_s=ttl_s), "snowflake") as earlier:
            earlier()
    finally:
        database.close()
    return url


def _backend_ids(cluster: Cluster, name: str, layout: str, count: int) -> list[int] | None:
    """``count`` IDs of ``idfields.next_<layout>()`` in a new backend, or None when it refuses
    for now."""
    call = pgsql.SQL("SELECT idfields.{}() FROM generate_series(1, %s)").format(
        pgsql.Identifier(f"next_{layout}")
    )
    try:
        with cluster.connect(name) as conn:
            rows = conn.execute(call, [count]).fetchall()
    except psycopg.Error as error:
        # The grace after the restart, or the node held (by a live process, or a backend of
        # a statement before whose row has not lapsed).
        assert error.sqlstate in ("57P03", "53400"), error
        return None
    return [int(row[0]) for row in rows]


def test_decimal_processes_across_a_restored_disk_snapshot_take_generator_ids_of_their_own(
    cluster: Cluster,
) -> None:
    """A snapshot, a DecimalSource claim, the snapshot restored, another claim: with the
    counter row of the snapshot, the second took the first's generator id (1,000 of 2,000 IDs
    received twice)."""
    url = _prepared(cluster, "decimal_app")
    snapshot = cluster.snapshot("decimal_app")
    first_db, second_db = DbApiDatabase("postgresql", url), DbApiDatabase("postgresql", url)
    try:
        with process(DecimalSource(first_db), DECIMAL) as first:
            firsts = issue(first, PER_CLAIM) or []
        cluster.restore(snapshot)
        with process(DecimalSource(second_db), DECIMAL) as second:
            seconds = issue(second, PER_CLAIM) or []
    finally:
        first_db.close()
        second_db.close()
    assert len(firsts) == len(seconds) == PER_CLAIM
    twice = len(set(firsts) & set(seconds))
    assert twice == 0, f"{twice} of {len(firsts) + len(seconds)} IDs received twice"


def test_next_decimal_after_a_restored_disk_snapshot_never_takes_a_live_generator_id(
    cluster: Cluster,
) -> None:
    """A DecimalSource claim after the snapshot, the snapshot restored, ``next_decimal()`` in
    a new backend: with the counter row of the snapshot, the backend took the app's generator
    id."""
    url = _prepared(cluster, "decimal_db")
    snapshot = cluster.snapshot("decimal_db")
    database = DbApiDatabase("postgresql", url)
    try:
        with process(DecimalSource(database), DECIMAL) as app:
            apps = issue(app, PER_CLAIM) or []
            cluster.restore(snapshot)
            backends = _backend_ids(cluster, "decimal_db", "decimal", PER_CLAIM)
            apps += issue(app, PER_CLAIM) or []
    finally:
        database.close()
    assert backends is not None
    twice = len(set(apps) & set(backends))
    assert twice == 0, f"{twice} of the backend's {len(backends)} IDs were the app's"


def _go_on_beside(
    first: IdGenerator, claims: Callable[[], list[int] | None], deadline_s: float
) -> tuple[list[int], list[int]]:
    """``claims()`` is called until the deadline (each call IDs, or None for a refusal), and
    after each call ``first`` issues, until it is refused; the IDs of each. The claims start:
    a live process learns what the database forgot at its next renewal only."""
    firsts: list[int] = []
    seconds: list[int] = []
    first_stopped = False
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        seconds += claims() or []
        if not first_stopped:
            got = issue(first, 200)
            first_stopped = got is None
            firsts += got or []
        time.sleep(0.005)
    return firsts, seconds


def test_a_process_after_a_restored_disk_snapshot_never_takes_a_live_processs_node(
    cluster: Cluster,
) -> None:
    """The snapshot, a snowflake process claims the one node of the range and issues; the
    snapshot restored; a second process starts and retries its refusals for three ttls while
    the first goes on. With the released row of the snapshot, the second claimed the node at
    once and repeated the first's IDs until the first's renewal failed."""
    url = _prepared(cluster, "snowflake_app", nodes=(0, 0))
    snapshot = cluster.snapshot("snowflake_app")
    first_db, second_db = DbApiDatabase("postgresql", url), DbApiDatabase("postgresql", url)
    try:
        with process(LeaseSource(first_db, ttl_s=HOLDER_TTL_S), "snowflake") as first:
            firsts = issue(first, 100) or []
            cluster.restore(snapshot)
            with process(LeaseSource(second_db, ttl_s=TTL_S), "snowflake") as second:
                more, seconds = _go_on_beside(first, lambda: issue(second, 200), 3 * HOLDER_TTL_S)
    finally:
        first_db.close()
        second_db.close()
    firsts += more
    twice = len(set(firsts) & set(seconds))
    assert seconds, "the second process never issued: the grace did not end"
    assert twice == 0, f"{twice} of the second process's {len(seconds)} IDs were the first's"


def test_a_backend_after_a_restored_disk_snapshot_never_takes_a_live_processs_node(
    cluster: Cluster,
) -> None:
    """As above, with a database backend in place of the second process, issuing in the
    milliseconds the first process issues in (the test hook's clock) while the first goes on,
    and on the server's clock once it stopped. With the lease row of the snapshot, the backend
    claimed the node and repeated the first's IDs."""
    url = _prepared(cluster, "snowflake_db", nodes=(0, 0))
    snapshot = cluster.snapshot("snowflake_db")
    database = DbApiDatabase("postgresql", url)
    firsts: list[int] = []
    backends: list[int] = []
    try:
        with process(LeaseSource(database, ttl_s=HOLDER_TTL_S), "snowflake") as first:
            firsts += issue(first, 100) or []
            cluster.restore(snapshot)
            with cluster.connect("snowflake_db") as backend:
                first_stopped = False
                deadline = time.monotonic() + 3 * HOLDER_TTL_S
                while time.monotonic() < deadline:
                    tick = None if first_stopped else firsts[-1] >> 22
                    try:
                        rows = backend.execute(
                            "SELECT idfields.next_snowflake_at(%s) FROM generate_series(1, 200)",
                            [tick],
                        ).fetchall()
                        backends += [int(row[0]) for row in rows]
                    except psycopg.Error as error:
                        assert error.sqlstate in ("57P03", "53400"), error
                    if not first_stopped:
                        got = issue(first, 200)
                        first_stopped = got is None
                        firsts += got or []
                    time.sleep(0.005)
    finally:
        database.close()
    twice = len(set(firsts) & set(backends))
    assert backends, "the backend never issued: the grace did not end"
    assert twice == 0, f"{twice} of the backend's {len(backends)} IDs were the app's"


def _ranges(conn: psycopg.Connection[Any], count: int) -> list[tuple[int, int]]:
    rows = conn.execute("SELECT * FROM idfields.take_snowflake_ranges(%s)", [count]).fetchall()
    return [(int(first), int(last)) for first, last in rows]


def _overlap(ours: list[tuple[int, int]], theirs: list[tuple[int, int]]) -> int:
    """How many IDs two lists of disjoint (first, last) ranges share."""
    return sum(
        max(0, min(last, other_last) - max(first, other_first) + 1)
        for first, last in ours
        for other_first, other_last in theirs
        if other_first <= last and first <= other_last
    )


def test_a_rolled_back_run_ahead_lost_in_a_crash_is_not_repeated(cluster: Cluster) -> None:
    """A backend takes 4,000,000 snowflake IDs on the never-used node of a one-node range,
    about a second ahead of the clock, and rolls back; the crash follows at once, before the
    WAL writer flushed the durable fence the rollback left; after the restart a new backend
    issues at the tick where the rolled-back run began (the test hook's clock: a restart faster
    than the run-ahead, or a clock set back by it). With the fence lost, its first 20,000 IDs
    were the rolled-back run's."""
    name = "run_ahead"
    cluster.database(name, nodes=(0, 0), ttl_ceiling_s=TTL_S)
    with cluster.connect(name) as conn:
        conn.execute("CHECKPOINT")
        conn.execute("BEGIN")
        rolled_back = _ranges(conn, 4_000_000)
        conn.execute("ROLLBACK")
        cluster.stop("immediate")
    cluster.start()
    tick = rolled_back[0][0] >> 22
    with cluster.connect(name) as conn:
        try:
            rows = conn.execute(
                "SELECT idfields.next_snowflake_at(%s) FROM generate_series(1, 20000)", [tick]
            ).fetchall()
        except psycopg.Error as error:
            assert error.sqlstate in ("57P03", "53400", "22008"), error
            rows = []
        again = [(int(row[0]), int(row[0])) for row in rows]
    twice = _overlap(rolled_back, again)
    assert twice == 0, f"{twice} of the rolled-back run's IDs were issued again"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # on the server's clock, once the grace has passed
        later = _backend_ids(cluster, name, "snowflake", 20_000)
        if later is not None:
            assert _overlap(rolled_back, [(i, i) for i in later]) == 0
            break
        time.sleep(0.05)
    else:
        raise AssertionError("no backend issued within 10 s of the restart")


@pytest.mark.parametrize(
    ("mode", "wait_s"), [("fast", 0.0), ("immediate", 4 * TTL_S + 1)], ids=["clean", "crash"]
)
def test_a_restart_delays_only_new_claims_and_only_after_a_crash(
    cluster: Cluster, mode: str, wait_s: float
) -> None:
    """A process holds its lease (8 s) across a restart and goes on without a pause. After a
    clean restart (``pg_ctl stop -m fast``, nothing lost) a new process claims at once; after
    a crash it claims once the longest lease ttl and a second have passed since the server
    started (measured from the start's return here, a little later)."""
    url = _prepared(cluster, f"restart_{mode}")
    holder_db, newcomer_db = DbApiDatabase("postgresql", url), DbApiDatabase("postgresql", url)
    waited = None
    try:
        with process(LeaseSource(holder_db, ttl_s=4 * TTL_S), "snowflake") as holder:
            assert issue(holder, 100)
            cluster.stop(mode)
            cluster.start()
            started = time.monotonic()
            while waited is None and time.monotonic() < started + 8 * TTL_S:
                holder_ids = [holder() for _ in range(100)]
                assert holder_ids, "the holder stopped after a restart"
                try:
                    with process(LeaseSource(newcomer_db, ttl_s=TTL_S), "snowflake") as newcomer:
                        newcomer()
                except NodeError as error:
                    assert "restarted through crash recovery" in str(error), error
                    time.sleep(0.05)
                    continue
                waited = time.monotonic() - started
    finally:
        holder_db.close()
        newcomer_db.close()
    assert waited is not None, "a new claim was refused for eight ttls after the restart"
    # Slack for a loaded machine that still tells the two apart: a clean restart's first claim
    # comes seconds before a crash's grace (9 s) could end.
    assert wait_s - 2 <= waited <= wait_s + 3, f"waited {waited:.2f} s"
