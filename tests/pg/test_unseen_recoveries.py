"""Crash recoveries that the server's start time does not show: one backend killed (the
postmaster stays up and reinitializes through crash recovery), and a crash or a restored disk
snapshot followed by a clean restart before any claim looked. PostgreSQL 15 discards the
statistics after crash recovery and resets them (``pg_stat_bgwriter.stats_reset``); a clean
restart keeps them. Counts IDs two clients *received*, on a throwaway cluster per test."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from dbapi_database import DbApiDatabase

from idfields.coordination import DecimalSource, LeaseSource
from idfields.layouts import DECIMAL
from tests.pg.test_restarts import _go_on_beside, _overlap, _prepared, _ranges
from tests.pg.test_restored_database import issue, process
from tests.pg.throwaway import Cluster, available, free_port, started_cluster

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.cluster, available]

TTL_S = 1.0
HOLDER_TTL_S = 4.0
# Renewed every 8 s: past the grace a 1 s ttl gives after a restore.
LONGER_TTL_S = 24.0


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """Commits asynchronous and the WAL writer slowed to 10 s: what a transaction wrote
    reaches the disk only if something else flushes it."""
    with started_cluster(
        "unseen", {"synchronous_commit": "off", "wal_writer_delay": "10000"}
    ) as made:
        yield made


def _kill_one_backend(cluster: Cluster, conn: psycopg.Connection[object]) -> None:
    """``kill -9`` of the backend of ``conn``: the postmaster ends every backend and
    reinitializes through crash recovery; its start time stays."""
    pid = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])  # type: ignore[index]
    os.kill(pid, signal.SIGKILL)
    while Path(f"/proc/{pid}").exists():  # reaped: the postmaster refuses connections from then
        time.sleep(0.01)
    cluster.ready(timeout_s=30)


def _clean_restart(cluster: Cluster) -> None:
    cluster.stop("fast")
    cluster.start()


def _restore_unseen(cluster: Cluster, snapshot: Path, clean_restart: bool) -> None:
    """The snapshot restored with no client looking: started on a port of its own (crash
    recovery), with ``clean_restart`` stopped cleanly, then started on its own port again."""
    port, cluster.port = cluster.port, free_port()
    cluster.restore(snapshot)
    if clean_restart:
        cluster.stop("fast")
    cluster.port = port
    if clean_restart:
        cluster.start()
    else:
        cluster.stop("immediate")
        cluster.start()


def _run_ahead_then(cluster: Cluster, name: str, kill: bool) -> int:
    """A recorded epoch; a backend takes 4,000,000 snowflake IDs about a second ahead on the
    one node of the range and rolls back; then the loss (one backend killed, or a crash and a
    clean restart); a new backend issues 20,000 IDs at the tick where the run began. How many
    of them the rolled-back run had issued."""
    cluster.database(name, nodes=(0, 0), ttl_ceiling_s=TTL_S)
    with cluster.connect(name) as conn:
        conn.execute("SELECT idfields.database_epoch(0)")  # the epoch, recorded
        conn.execute("CHECKPOINT")
    with cluster.connect(name) as conn:
        conn.execute("BEGIN")
        rolled_back = _ranges(conn, 4_000_000)
        conn.execute("ROLLBACK")
        if kill:
            _kill_one_backend(cluster, conn)
        else:
            cluster.stop("immediate")
    if not kill:
        cluster.start()
        _clean_restart(cluster)
    tick = rolled_back[0][0] >> 22
    with cluster.connect(name) as again:
        try:
            rows = again.execute(
                "SELECT idfields.next_snowflake_at(%s) FROM generate_series(1, 20000)", [tick]
            ).fetchall()
        except psycopg.Error as error:
            assert error.sqlstate in ("57P03", "53400", "22008"), error
            rows = []
    return _overlap(rolled_back, [(int(row[0]), int(row[0])) for row in rows])


def _second_process_beside_a_live_one(
    cluster: Cluster, name: str, first_ttl_s: float, second_ttl_s: float, clean_restart: bool
) -> tuple[int, int]:
    """The snapshot of a deployment on one node (its recorded ttl the second's, under a
    ceiling of the first's); a first process claims the node and issues; the snapshot
    restored unseen; a second process retries beside the first for half the first's ttl, or
    three of the second's where that is longer. IDs received twice, and in all."""
    ceiling_s = max(first_ttl_s, 4 * TTL_S)
    url = _prepared(cluster, name, nodes=(0, 0), ttl_s=second_ttl_s, ceiling_s=ceiling_s)
    snapshot = cluster.snapshot(name)
    first_db, second_db = DbApiDatabase("postgresql", url), DbApiDatabase("postgresql", url)
    try:
        with process(LeaseSource(first_db, ttl_s=first_ttl_s), "snowflake") as first:
            firsts = issue(first, 100) or []
            _restore_unseen(cluster, snapshot, clean_restart)
            with process(LeaseSource(second_db, ttl_s=second_ttl_s), "snowflake") as second:
                beside_s = max(first_ttl_s / 2, 3 * second_ttl_s)
                more, seconds = _go_on_beside(first, lambda: issue(second, 200), beside_s)
    finally:
        first_db.close()
        second_db.close()
    firsts += more
    return len(set(firsts) & set(seconds)), len(firsts) + len(seconds)


def test_d1_one_killed_backend_counts_as_a_loss(cluster: Cluster) -> None:
    """D1: one backend killed with ``kill -9`` after a rolled-back run-ahead: crash recovery
    without a new postmaster lost the durable fence, and the new backend repeated 20,000 of
    20,000 IDs."""
    twice = _run_ahead_then(cluster, "killed", kill=True)
    assert twice == 0, f"{twice} of the rolled-back run's IDs were issued again"


def test_d2_a_crash_then_a_clean_restart_counts_as_a_loss(cluster: Cluster) -> None:
    """D2: a crash, then a clean restart before any claim looked: 20,000 of 20,000."""
    twice = _run_ahead_then(cluster, "crash_clean", kill=False)
    assert twice == 0, f"{twice} of the rolled-back run's IDs were issued again"


def test_d3_a_restored_snapshot_then_a_clean_restart_keeps_a_live_processs_node(
    cluster: Cluster,
) -> None:
    """D3: the snapshot, a process claims the one node and issues; the snapshot restored and
    the server restarted cleanly; a second process retries for three ttls beside the first:
    237,058 of 570,400 IDs received twice."""
    twice, total = _second_process_beside_a_live_one(
        cluster, "snapshot_clean", HOLDER_TTL_S, HOLDER_TTL_S, clean_restart=True
    )
    assert twice == 0, f"{twice} of {total} IDs received twice"


def test_d4_a_decimal_process_after_a_restored_snapshot_and_a_clean_restart(
    cluster: Cluster,
) -> None:
    """D4: the snapshot, a DecimalSource claim, the snapshot restored and the server
    restarted cleanly, another claim: 1,000 of 1,000 of its IDs were the first's."""
    url = _prepared(cluster, "decimal_clean")
    snapshot = cluster.snapshot("decimal_clean")
    first_db, second_db = DbApiDatabase("postgresql", url), DbApiDatabase("postgresql", url)
    try:
        with process(DecimalSource(first_db), DECIMAL) as first:
            firsts = issue(first, 1000) or []
        _restore_unseen(cluster, snapshot, clean_restart=True)
        with process(DecimalSource(second_db), DECIMAL) as second:
            seconds = issue(second, 1000) or []
    finally:
        first_db.close()
        second_db.close()
    assert len(firsts) == len(seconds) == 1000
    twice = len(set(firsts) & set(seconds))
    assert twice == 0, f"{twice} of the second's {len(seconds)} IDs were the first's"


def test_d5_a_longer_ttl_lost_with_a_restored_snapshot_still_bounds_the_grace(
    cluster: Cluster,
) -> None:
    """D5: the snapshot records the deploy's 1 s ttl under a ceiling of 24 s; a process on a
    24 s ttl claims the one node after it (its ttl recorded, lost with the restore); a second
    process on 1 s retries beside it. With a grace of the recorded 1 s ttl, it claimed while
    the first still issued on its 24 s lease, up to its renewal 8 s after its claim: 35,571
    of 484,100 IDs received twice."""
    twice, total = _second_process_beside_a_live_one(
        cluster, "longer_ttl", LONGER_TTL_S, TTL_S, clean_restart=False
    )
    assert twice == 0, f"{twice} of {total} IDs received twice"
