"""A failover to an asynchronous standby that lagged: the standby, cut off from its primary's
WAL, is promoted after app processes claimed on the primary, and the clients go on against it
(a pooler or DNS repointed). Database backends on the new primary claim as app processes do:
never what a live process still holds from the old primary. Counts IDs two clients *received*,
on a throwaway primary and standby."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest
from dbapi_database import DbApiDatabase, Repointed

from idfields.coordination import DecimalSource, LeaseSource, record_launch
from idfields.layouts import DECIMAL
from tests.pg.test_restored_database import issue, process
from tests.pg.throwaway import Cluster, available, cluster_root

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.cluster, available]

TTL_S = 2.0
NAME = "app"


@pytest.fixture
def promoted() -> Iterator[tuple[Cluster, Cluster]]:
    """A primary whose database ``app`` has the tables, the functions on node 0 alone, launch
    1 and its identity recorded, and a hot standby that replayed all of it and then stopped
    receiving WAL (``primary_conninfo`` emptied): the primary goes on alone until the test
    promotes the standby."""
    with cluster_root() as root:
        primary = Cluster(root, "primary").init()
        primary.start()
        url = primary.url(primary.database(NAME, nodes=(0, 0), ttl_ceiling_s=TTL_S))
        database = DbApiDatabase("postgresql", url)
        record_launch(database, "v1")
        DecimalSource(database).acquire(DECIMAL)  # records the identity
        database.close()
        standby = primary.standby("standby")
        standby.start()
        with primary.connect(NAME) as conn:
            row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
        assert row is not None
        with standby.connect(NAME) as conn:
            while conn.execute(
                "SELECT pg_last_wal_replay_lsn() < %s::text::pg_lsn", [_text(row[0])]
            ).fetchone() != (False,):
                time.sleep(0.05)
            conn.execute("ALTER SYSTEM SET primary_conninfo = ''")
            conn.execute("SELECT pg_reload_conf()")
            while conn.execute("SELECT count(*) FROM pg_stat_wal_receiver").fetchone() != (0,):
                time.sleep(0.05)
        yield primary, standby


def _text(value: object) -> str:
    """A text column as text: the throwaway cluster's databases are SQL_ASCII (bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def failover(primary: Cluster, standby: Cluster, *clients: Repointed) -> None:
    """The old primary crashes, the lagging standby is promoted, the clients are repointed."""
    primary.stop("immediate")
    standby.promote()
    for client in clients:
        client.repoint(standby.url(NAME))


def test_backends_on_a_promoted_standby_never_take_a_live_processs_node(
    promoted: tuple[Cluster, Cluster],
) -> None:
    """A snowflake process claims the one node on the primary; the failover; a backend on the
    new primary issues in the milliseconds the process issues in (the test hook's clock) while
    the process goes on, and on the server's clock once it stopped. With the lease row the
    standby never received, the backend claimed the node and repeated the process's IDs."""
    primary, standby = promoted
    database = Repointed(primary.url(NAME))
    apps: list[int] = []
    backends: list[int] = []
    try:
        with process(LeaseSource(database, ttl_s=TTL_S), "snowflake") as app:
            apps += issue(app, 100) or []
            failover(primary, standby, database)
            with standby.connect(NAME) as backend:
                stopped = False
                deadline = time.monotonic() + 4 * TTL_S
                while time.monotonic() < deadline:
                    tick = None if stopped else apps[-1] >> 22
                    try:
                        rows = backend.execute(
                            "SELECT idfields.next_snowflake_at(%s) FROM generate_series(1, 200)",
                            [tick],
                        ).fetchall()
                        backends += [int(row[0]) for row in rows]
                    except psycopg.Error as error:
                        assert error.sqlstate in ("57P03", "53400"), error
                    if not stopped:
                        got = issue(app, 200)
                        stopped = got is None
                        apps += got or []
                    time.sleep(0.005)
    finally:
        database.close()
    twice = len(set(apps) & set(backends))
    assert backends, "the backend never issued: the grace did not end"
    assert twice == 0, f"{twice} of the backend's {len(backends)} IDs were the app's"


def test_next_decimal_on_a_promoted_standby_never_takes_a_live_generator_id(
    promoted: tuple[Cluster, Cluster],
) -> None:
    """A DecimalSource claim on the primary; the failover; ``next_decimal()`` in a backend of
    the new primary while the process goes on. With the counter row the standby never
    received, the backend took the process's generator id: 1,000 of its 1,000 IDs were the
    process's."""
    primary, standby = promoted
    database = Repointed(primary.url(NAME))
    try:
        with process(DecimalSource(database), DECIMAL) as app:
            apps = issue(app, 1000) or []
            failover(primary, standby, database)
            with standby.connect(NAME) as backend:
                rows = backend.execute(
                    "SELECT idfields.next_decimal() FROM generate_series(1, 1000)"
                ).fetchall()
            apps += issue(app, 1000) or []
    finally:
        database.close()
    backends = [int(row[0]) for row in rows]
    twice = len(set(apps) & set(backends))
    assert twice == 0, f"{twice} of the backend's {len(backends)} IDs were the app's"
