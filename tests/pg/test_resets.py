"""A backend that loses its position (DISCARD TEMP/ALL, RESET ALL, DISCARD SEQUENCES, a dropped
sequence) takes its own node back behind its own fence: pooled clients through one backend use
one node, not one per reset, and no ID repeats (lease-protocol invariants D2 and D3)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from typing import Any

import needs
import psycopg
import pytest
from databases import DbUrl
from psycopg import sql as pgsql

from idfields.layouts import Layout
from tests.pg import pgbouncer
from tests.pg.conftest import (
    BOTH_PATHS,
    Connect,
    drop_role,
    fill_but,
    grant_as_documented,
    install_as_plain_owner,
    run_in_threads,
)

# Resets of one backend (test_resets_keep_the_backends_node): a backend that lost its node at
# a reset shows a second node at the first; the lease model (lease/test_db_lease_model*.py)
# puts resets between renewals and clock steps.
RESETS = 300
# PgBouncer 1.18 on the CI machine stops accepting after about 230 connections in a row.
CLIENTS = 100


def backend_nodes(conn: psycopg.Connection[Any], pid: int) -> int:
    """How many snowflake lease rows name the backend ``pid`` as their holder."""
    row = conn.execute(
        "SELECT count(*) FROM idfields_node_lease WHERE layout = 'snowflake' AND holder LIKE %s",
        [f"pg:{pid}:%"],
    ).fetchone()
    assert row is not None
    return int(row[0])


@BOTH_PATHS
@pytest.mark.parametrize(
    "reset",
    [
        "DISCARD ALL",
        "DISCARD TEMP",
        "RESET ALL",
        "DISCARD SEQUENCES",
        "DROP SEQUENCE pg_temp.idfields_snowflake",
        "RESET ALL; DISCARD TEMP",
    ],
)
def test_resets_keep_the_backends_node(
    connect: Connect, pg_kwargs: dict[str, object], reset: str
) -> None:
    """300 resets of one backend, each followed by IDs: one lease row, one node, no repeat
    (SQL without the re-take: a node per reset)."""
    conn = connect(prepare_threshold=None)  # DISCARD ALL drops prepared statements
    pid = conn.info.backend_pid
    ids: list[int] = []
    for _ in range(RESETS):
        ids += [r[0] for r in conn.execute(
            "SELECT idfields.next_snowflake() FROM generate_series(1, 3)").fetchall()]  # fmt: skip
        conn.execute(reset)
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids)  # one backend, one node: its IDs keep increasing
    assert len({(i >> 12) & 1023 for i in ids}) == 1
    assert backend_nodes(connect(), pid) == 1


@BOTH_PATHS
def test_a_reset_inside_a_busy_tick_never_repeats(connect: Connect) -> None:
    """Resets between statements of 5,000 IDs each (more than a tick's 4,096: the backend runs
    ahead of the clock): the re-taken node starts behind the fence of its own lease row."""
    conn = connect(prepare_threshold=None)
    ids: list[int] = []
    for _ in range(20):
        rows = conn.execute("SELECT idfields.next_snowflake() FROM generate_series(1, 5000)")
        ids += [row[0] for row in rows.fetchall()]
        conn.execute("DISCARD ALL")
    assert len(ids) - len(set(ids)) == 0


@pytest.fixture
def session_bouncer(postgres_url: str, pg_kwargs: dict[str, object]) -> Iterator[Any]:
    """A session-mode PgBouncer resetting with DISCARD ALL, one server connection."""
    if pgbouncer.binary() is None:
        needs.skip("pgbouncer")
    running = pgbouncer.start(DbUrl.parse(postgres_url), "session", "DISCARD ALL", pool_size=1)
    yield running
    running.stop()


def test_pooled_clients_through_one_backend_use_one_node(
    session_bouncer: Any, connect: Connect
) -> None:
    """100 clients one after another through session-mode PgBouncer (DISCARD ALL between them),
    each inserting a row: one backend, one node, 100 distinct IDs (SQL without the re-take:
    a node per client, and about 2,150 clients exhaust all 1,024 nodes)."""
    kwargs = session_bouncer.url.psycopg_kwargs()
    with psycopg.connect(**kwargs, autocommit=True) as first:
        first.execute("DROP TABLE IF EXISTS pooled_rows")
        first.execute(
            "CREATE TABLE pooled_rows (id bigint PRIMARY KEY DEFAULT idfields.next_snowflake(), "
            "backend integer)"
        )
    try:
        for _ in range(CLIENTS):
            with psycopg.connect(**kwargs, autocommit=True, prepare_threshold=None) as client:
                client.execute("INSERT INTO pooled_rows (backend) VALUES (pg_backend_pid())")
        admin = connect()
        rows = admin.execute(
            "SELECT count(*), count(DISTINCT id), count(DISTINCT (id >> 12) & 1023), "
            "count(DISTINCT backend), min(backend) FROM pooled_rows"
        ).fetchone()
        assert rows is not None
        count, distinct, nodes, backends, pid = rows
        assert (count, distinct, backends) == (CLIENTS, CLIENTS, 1)
        assert nodes == 1
        assert backend_nodes(admin, pid) == 1
    finally:
        connect().execute("DROP TABLE IF EXISTS pooled_rows")


def test_pooled_clients_under_another_role_use_one_node(
    session_bouncer: Any, empty_database: DbUrl
) -> None:
    """100 clients through session-mode PgBouncer, each switching to a role with the documented
    grants (SET ROLE) before its insert; DISCARD ALL between them. The functions' owner is no
    superuser and may not read the sessions' start times. The backend knows its own lease row
    by its pid: one node (with a holder that named the transaction where the start was
    unreadable: a node per client, 100)."""
    database = empty_database.database
    owner, role = (f"idfields_{kind}_{secrets.token_hex(3)}" for kind in ("owner", "tenant"))
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as admin:
        admin.execute(pgsql.SQL("CREATE ROLE {} LOGIN").format(pgsql.Identifier(role)))
        try:
            install_as_plain_owner(admin, database, owner, reads_stats=False)
            grant_as_documented(admin, role, database)
            admin.execute(
                "CREATE TABLE pooled_rows (id bigint PRIMARY KEY "
                "DEFAULT idfields.next_snowflake(), backend integer)"
            )
            admin.execute(pgsql.SQL("GRANT INSERT ON pooled_rows TO {}").format(
                pgsql.Identifier(role)))  # fmt: skip
            through = session_bouncer.url.with_database(database).psycopg_kwargs()
            for _ in range(CLIENTS):
                with psycopg.connect(**through, autocommit=True, prepare_threshold=None) as client:
                    client.execute(pgsql.SQL("SET ROLE {}").format(pgsql.Identifier(role)))
                    client.execute("INSERT INTO pooled_rows (backend) VALUES (pg_backend_pid())")
            rows = admin.execute(
                "SELECT count(DISTINCT id), count(DISTINCT (id >> 12) & 1023), "
                "count(DISTINCT backend), min(backend) FROM pooled_rows"
            ).fetchone()
            assert rows is not None
            distinct, nodes, backends, pid = rows
            assert (distinct, backends) == (CLIENTS, 1)
            assert nodes == 1
            assert backend_nodes(admin, pid) == 1
        finally:
            session_bouncer.stop()  # its server connection ends, with the owner's temp objects
            admin.execute(
                "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            admin.execute(pgsql.SQL("GRANT TEMPORARY ON DATABASE {} TO PUBLIC").format(
                pgsql.Identifier(database)))  # fmt: skip
            drop_role(admin, role)
            admin.execute("DROP TABLE IF EXISTS pooled_rows")
            admin.execute("DROP SCHEMA IF EXISTS idfields CASCADE")
            drop_role(admin, owner)


def test_an_app_holder_on_a_host_named_pg_is_never_taken_for_the_backends_own(
    connect: Connect, one_node: Layout
) -> None:
    """An app process on a host named ``pg`` whose pid equals the backend's writes a holder
    that starts like the backend's: the backend's re-take after a reset leaves it alone."""
    conn = connect(prepare_threshold=None)
    pid = conn.info.backend_pid
    connect().execute(
        "INSERT INTO idfields_node_lease (layout, node, holder, acquired_at_ms, expires_at_ms) "
        "VALUES (%s, 0, %s, 0, %s)",
        [one_node.lease_key, f"pg:{pid}:0a1b2c3d-4026531836-4026531834:1234:0123456789", 2**62],
    )
    function = pgsql.Identifier(f"next_{one_node.name}")
    for _ in range(2):
        with pytest.raises(psycopg.errors.ConfigurationLimitExceeded, match="no free"):
            conn.execute(pgsql.SQL("SELECT idfields.{}()").format(function))
        conn.execute("DISCARD ALL")


def test_a_backend_killed_half_way_through_a_claim_leaves_nothing_behind(connect: Connect) -> None:
    """The claimer waits on node 7's row (another transaction is inserting it) when it is
    terminated: no row and no advisory lock of it remain, and the next claimer gets node 7."""
    admin = connect()
    fill_but(admin, {})
    admin.execute("DELETE FROM public.idfields_node_lease WHERE layout = 'snowflake' AND node = 7")
    inserting = connect(autocommit=False)
    inserting.execute(
        "INSERT INTO public.idfields_node_lease (layout, node, holder, acquired_at_ms, "
        "expires_at_ms) VALUES ('snowflake', 7, 'app:inserting', 0, 1)"
    )
    claimer = connect()
    pid = claimer.info.backend_pid
    failures: list[str] = []

    def claim(_: int) -> None:
        try:
            claimer.execute("SELECT idfields.next_snowflake()")
        except psycopg.OperationalError as error:
            failures.append(type(error).__name__)

    def kill(_: int) -> None:
        while admin.execute(
            "SELECT wait_event_type IS DISTINCT FROM 'Lock' FROM pg_stat_activity WHERE pid = %s",
            [pid],
        ).fetchone() == (True,):
            time.sleep(0.01)
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])

    try:
        run_in_threads(lambda index: (claim if index == 0 else kill)(index), 2)
        inserting.rollback()
        assert failures == ["AdminShutdown"]
        assert admin.execute(
            "SELECT count(*) FROM public.idfields_node_lease WHERE holder LIKE %s", [f"pg:{pid}:%"]
        ).fetchone() == (0,)
        assert admin.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = %s", [pid]
        ).fetchone() == (0,)
        next_id = int(connect().execute("SELECT idfields.next_snowflake()").fetchone()[0])
        assert (next_id >> 12) & 1023 == 7
    finally:
        inserting.rollback()
        admin.execute("DELETE FROM public.idfields_node_lease WHERE layout = 'snowflake'")
