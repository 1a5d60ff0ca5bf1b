"""The coordination database loses commits a client saw: ``synchronous_commit = off`` and a
crash (``pg_ctl stop -m immediate``) before the WAL writer flushed them. A lease, a generator
id or an allocator block that the client saw committed is handed out again after the restart
unless its transaction's commit was durable. Counts IDs two clients *received*; a throwaway
cluster per module, the WAL writer slowed to 10 s so that the loss does not depend on timing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from dbapi_database import DbApiDatabase

from idfields import NodeError, make_generator
from idfields.coordination import DecimalSource, LeaseSource, record_launch
from idfields.generators import IdGenerator
from idfields.layouts import DECIMAL
from tests.pg.throwaway import Cluster, available, started_cluster

pytestmark = [pytest.mark.postgres, pytest.mark.slow, available]

PER_CLAIM = 1000
# The lease ttl and its ceiling: the grace after each of the module's crashes is 2 s, not 60.
TTL_S = 2.0


@pytest.fixture(scope="module")
def lossy() -> Iterator[Cluster]:
    with started_cluster(
        "lossy", {"synchronous_commit": "off", "wal_writer_delay": "10000"}
    ) as made:
        yield made


def crash(cluster: Cluster) -> None:
    cluster.stop("immediate")
    cluster.start()


def _decimal_ids(url: str) -> list[int]:
    database = DbApiDatabase("postgresql", url)
    try:
        generator = make_generator(DECIMAL, DecimalSource(database))
        return [generator() for _ in range(PER_CLAIM)]
    finally:
        database.close()


def _record_launch(url: str) -> None:
    """A launch, checkpointed: only what the test does after it is at stake."""
    app = DbApiDatabase("postgresql", url)
    try:
        record_launch(app, "v1")
        app.execute("CHECKPOINT")
    finally:
        app.close()


def _after_any_grace(generator: IdGenerator) -> int:
    """An ID once the grace after an earlier crash of the cluster (another test's) has passed:
    the first claim in a new database counts from the server's start."""
    deadline = time.monotonic() + 10 * TTL_S
    while True:
        try:
            return generator()
        except NodeError as error:
            if "crash recovery" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_generator_ids_a_client_saw_survive_a_crash(lossy: Cluster) -> None:
    """Five DecimalSource claims of 1,000 IDs each, a crash, five more: with the claims'
    commits asynchronous, 5,000 of the 10,000 IDs were received twice."""
    url = lossy.url(lossy.database("decimal_app", ttl_ceiling_s=TTL_S))
    _record_launch(url)
    before = [i for _ in range(5) for i in _decimal_ids(url)]
    crash(lossy)
    after = [i for _ in range(5) for i in _decimal_ids(url)]
    twice = len(set(before) & set(after))
    assert twice == 0, f"{twice} of {len(before) + len(after)} IDs received twice"


def test_allocator_blocks_a_backend_saw_survive_a_crash(lossy: Cluster) -> None:
    """``next_decimal()`` in two fresh backends, left open (a backend's exit drops its
    temporary sequence, a commit PostgreSQL makes durable anyway), a crash, two more."""
    name = lossy.database("decimal_db", ttl_ceiling_s=TTL_S)
    _record_launch(lossy.url(name))

    def issue(conn: psycopg.Connection[Any]) -> list[int]:
        rows = conn.execute(
            "SELECT idfields.next_decimal() FROM generate_series(1, %s)", [PER_CLAIM]
        ).fetchall()
        return [int(row[0]) for row in rows]

    backends = [lossy.connect(name) for _ in range(2)]
    before = [i for conn in backends for i in issue(conn)]
    crash(lossy)
    for conn in backends:
        conn.close()
    after = []
    for _ in range(2):
        with lossy.connect(name) as conn:
            after += issue(conn)
    twice = len(set(before) & set(after))
    assert twice == 0, f"{twice} of {len(before) + len(after)} IDs received twice"


def test_a_lease_a_process_saw_survives_a_crash(lossy: Cluster) -> None:
    """A snowflake process holds the one node of the database's range; a crash; a second
    process starts: it must find the node held. With an asynchronous claim it took the node,
    and both issued on it in the same milliseconds."""
    url = lossy.url(lossy.database("snowflake_app", nodes=(0, 0), ttl_ceiling_s=TTL_S))
    with lossy.connect("postgres") as conn:
        conn.execute("CHECKPOINT")
    first_db, second_db = DbApiDatabase("postgresql", url), DbApiDatabase("postgresql", url)
    first = make_generator("snowflake", LeaseSource(first_db, ttl_s=TTL_S))
    second = None
    try:
        seen = [_after_any_grace(first)] + [first() for _ in range(999)]
        crash(lossy)
        second = make_generator("snowflake", LeaseSource(second_db, ttl_s=TTL_S))
        try:
            theirs = [second() for _ in range(20_000)]
        except NodeError as error:  # the node is held, or the grace after the crash lasts
            assert "no free node" in str(error) or "crash recovery" in str(error), error
            theirs = []
        seen += [first() for _ in range(20_000)]
    finally:
        first.close()
        if second is not None:
            second.close()
        first_db.close()
        second_db.close()
    twice = len(set(seen) & set(theirs))
    assert twice == 0, f"{twice} of the second process's {len(theirs)} IDs were the first's"
