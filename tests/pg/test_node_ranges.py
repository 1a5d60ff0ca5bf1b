"""A database's node range (install ``nodes=``): the SQL functions and app leases claim only
inside it; narrowing it waits for the nodes given up to be idle, widening it fences the nodes
gained; the Django and Alembic operations record it; bad ranges are refused by name."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import alembic_env
import psycopg
import pytest
from alembic import command
from databases import DbUrl
from dbapi_database import DbApiDatabase

from idfields import sql
from idfields.coordination import LeaseSource
from idfields.errors import NodeError
from idfields.layouts import Layout, Node, Sequence, Timestamp, get_layout
from idfields.sql.noderange import WHOLE, NodeRange, node_range
from tests.pg.test_install_ops import django_connection, run  # noqa: F401  (a fixture)

pytestmark = pytest.mark.postgres

SNOWFLAKE = get_layout("snowflake")


def connect(url: DbUrl) -> psycopg.Connection:
    return psycopg.connect(**url.psycopg_kwargs(), autocommit=True)


def install(url: DbUrl, nodes: object) -> None:
    with connect(url) as conn:
        conn.execute(sql.load(sql.VERSION, nodes=nodes).encode())


def recorded(url: DbUrl) -> NodeRange:
    with connect(url) as conn:
        row = conn.execute("SELECT * FROM idfields.node_range()").fetchone()
    assert row is not None
    return NodeRange(*row)


def node_of(conn: psycopg.Connection, function: str = "snowflake") -> int:
    field = "node" if function == "snowflake" else "node_no"
    row = conn.execute(
        f"SELECT (idfields.decode_{function}(idfields.next_{function}())).{field}".encode()
    ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def sessions(empty_database: DbUrl) -> Iterator[list[psycopg.Connection]]:
    opened = [connect(empty_database) for _ in range(5)]
    yield opened
    for conn in opened:
        conn.close()


def test_backends_claim_only_inside_the_range(
    empty_database: DbUrl, sessions: list[psycopg.Connection]
) -> None:
    install(empty_database, range(100, 104))
    assert sorted(node_of(conn) for conn in sessions[:4]) == [100, 101, 102, 103]
    assert {node_of(conn, "traceid") for conn in sessions[:4]} == {100, 101, 102, 103}
    with pytest.raises(psycopg.errors.ConfigurationLimitExceeded, match="4 of 4 are held"):
        node_of(sessions[4])


def test_app_leases_claim_only_inside_the_range_after_its_fence(empty_database: DbUrl) -> None:
    install(empty_database, range(100, 104))
    limits = recorded(empty_database)
    database = DbApiDatabase("postgresql", str(empty_database))
    try:
        source = LeaseSource(database)
        assignments = [source.acquire(SNOWFLAKE) for _ in range(4)]
        assert sorted(a.values["node"] for a in assignments) == [100, 101, 102, 103]
        assert all(a.not_before_ns >= limits.fenced_until_ms * 10**6 for a in assignments)
        with pytest.raises(NodeError, match=r"4 nodes \(100..103\)"):
            source.acquire(SNOWFLAKE)
    finally:
        database.close()


def test_a_layout_without_a_node_in_the_range_is_refused_by_name(
    empty_database: DbUrl, sessions: list[psycopg.Connection]
) -> None:
    install(empty_database, range(2000, 3000))  # traceid has 65,536 nodes, snowflake 1,024
    assert node_of(sessions[0], "traceid") == 2000
    with pytest.raises(psycopg.errors.ConfigurationLimitExceeded, match="no node in this"):
        node_of(sessions[1])
    narrow = Layout("narrow", [Timestamp(41), Node(8), Sequence(14)])
    database = DbApiDatabase("postgresql", str(empty_database))
    try:
        with pytest.raises(NodeError, match="no node in this database's nodes 2000-2999"):
            LeaseSource(database).acquire(narrow)
    finally:
        database.close()


def test_narrowing_waits_for_the_nodes_given_up_then_releases_their_rows(
    empty_database: DbUrl, sessions: list[psycopg.Connection]
) -> None:
    install(empty_database, None)
    assert node_of(sessions[0]) == 0
    with pytest.raises(psycopg.errors.ObjectInUse, match="node 0 of layout snowflake is leased"):
        install(empty_database, range(512, 1024))
    assert recorded(empty_database) == WHOLE  # nothing changed
    with connect(empty_database) as admin:  # the idle backend's lease lapses (2 s)
        while admin.execute(
            "SELECT expires_at_ms >= idfields.clock_ms() FROM idfields_node_lease"
        ).fetchone() != (False,):
            time.sleep(0.1)
    install(empty_database, range(512, 1024))
    with connect(empty_database) as admin:
        holders = admin.execute("SELECT holder FROM idfields_node_lease").fetchall()
    assert holders == [("",)]  # no renewal revives it
    assert node_of(sessions[0]) == 512  # the backend moves into the range


def test_nodes_gained_are_fenced_and_a_reinstall_keeps_the_fence(empty_database: DbUrl) -> None:
    install(empty_database, None)
    assert recorded(empty_database).fenced_until_ms == 0  # one database, as without ranges
    install(empty_database, range(0, 512))
    assert recorded(empty_database).fenced_until_ms == 0  # narrowed: nothing gained
    with connect(empty_database) as conn:
        clock = conn.execute("SELECT idfields.clock_ms()").fetchone()[0]
    install(empty_database, range(0, 1024))
    widened = recorded(empty_database)
    assert widened.fenced_until_ms >= clock + 1000
    install(empty_database, range(0, 1024))
    assert recorded(empty_database) == widened
    with connect(empty_database) as conn:
        first = SNOWFLAKE.decode(conn.execute("SELECT idfields.next_snowflake()").fetchone()[0])
    assert first.time_ns // 10**6 > widened.fenced_until_ms


def test_django_operation_records_the_range_of_its_alias(django_connection: Any) -> None:  # noqa: F811
    from idfields.migrations.django import InstallIdFunctions

    operation = InstallIdFunctions(sql.VERSION, nodes={"default": range(0, 256), "b": "256-511"})
    assert operation.deconstruct()[2]["nodes"] == {"default": "0-255", "b": "256-511"}
    run(django_connection, operation, "forwards")
    with django_connection.cursor() as cursor:
        cursor.execute("SELECT first_node, last_node FROM idfields.node_range()")
        assert cursor.fetchone() == (0, 255)
    elsewhere = InstallIdFunctions(sql.VERSION, nodes={"b": "256-511"})
    with pytest.raises(ValueError, match="no node range for database alias 'default'"):
        run(django_connection, elsewhere, "forwards")


def test_alembic_operation_records_the_range(empty_database: DbUrl, tmp_path: Path) -> None:
    install_op = f'op.install_id_functions("{sql.VERSION}", nodes=range(256, 512))'
    migration = alembic_env.migration(install_op, f'op.drop_id_functions("{sql.VERSION}")')
    url = empty_database.sqlalchemy_url()
    command.upgrade(alembic_env.alembic_config(tmp_path, url, migration)[0], "head")
    limits = recorded(empty_database)
    assert (limits.first, limits.last) == (256, 511)


@pytest.mark.parametrize("bad", [range(5, 5), range(0, 10, 2), "a-b", (3, 1), (0, 2**31), 7])
def test_a_bad_range_is_refused_naming_the_forms(bad: object) -> None:
    with pytest.raises(ValueError, match="nodes=range"):
        node_range(bad)
    with pytest.raises(ValueError, match="nodes=range"):
        sql.load(sql.VERSION, nodes=bad)


def waiting_for_a_lock(admin: psycopg.Connection, database: str) -> bool:
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
        [database],
    ).fetchone()
    return row is not None and row[0] > 0


def hold_elsewhere(url: DbUrl, nodes: range) -> None:
    """Live leases of ``nodes`` held by an app process on another host (alive: L3), so a claim
    can only take a node outside them."""
    with connect(url) as conn:
        conn.execute(
            "INSERT INTO idfields_node_lease (layout, node, holder, acquired_at_ms, "
            "expires_at_ms) SELECT 'snowflake', n, 'elsewhere:4242:0:0:' || n, "
            "idfields.clock_ms(), idfields.clock_ms() + 3600000 "
            "FROM generate_series(%s::integer, %s::integer) AS n",
            [nodes.start, nodes.stop - 1],
        )


@pytest.mark.parametrize("claimer", ["backend", "app"])
def test_a_claim_racing_a_narrowing_is_undone(empty_database: DbUrl, claimer: str) -> None:
    """The claim reads the old range, then waits for the table the narrowing migration has
    locked; once that commits, the claim sees the new range and never keeps a node outside.
    The nodes of the new range are held, so the claim's node is outside it whichever it picks
    (free, an app claim picks at random: 24 of 1,024 nodes lie inside)."""
    install(empty_database, None)
    hold_elsewhere(empty_database, range(1000, 1024))
    outcome: list[object] = []

    def claim(_: int) -> None:
        if claimer == "backend":
            with connect(empty_database) as conn:
                try:
                    outcome.append(node_of(conn))
                except psycopg.errors.SerializationFailure as error:
                    outcome.append(error)
            return
        database = DbApiDatabase("postgresql", str(empty_database))
        try:
            outcome.append(LeaseSource(database).acquire(SNOWFLAKE).values["node"])
        except NodeError as error:
            outcome.append(error)
        finally:
            database.close()

    with (
        connect(empty_database) as admin,
        psycopg.connect(**empty_database.psycopg_kwargs()) as migration,
    ):
        migration.execute(sql.load(sql.VERSION, nodes=range(1000, 1024)).encode())  # uncommitted
        thread = threading.Thread(target=claim, args=(0,))
        thread.start()
        waited = False
        while thread.is_alive() and not waited:  # polling, not a timed assertion
            waited = waiting_for_a_lock(admin, empty_database.database or "")
            time.sleep(0.01)
        migration.commit()
        thread.join()
        live = admin.execute(
            "SELECT node FROM idfields_node_lease WHERE holder <> '' "
            "AND holder NOT LIKE 'elsewhere:%%' AND expires_at_ms >= idfields.clock_ms()"
        ).fetchall()
    assert waited, f"the claim ended without waiting for the migration's lock: {outcome}"
    (result,) = outcome
    expected = "node range changed while" if claimer == "backend" else "left this database's"
    assert isinstance(result, Exception) and expected in str(result)
    assert all(1000 <= node <= 1023 for (node,) in live)
