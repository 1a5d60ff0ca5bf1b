"""The window a session holds (invariant D9 of docs/explanation/lease-protocol-database.md): the
inlined hot path issues only on the node the functions' owner recorded for the session, no
further than the limit the owner recorded, whatever the calling role did to the session's
sequence and settings; and it needs no PL/pgSQL call for a transaction's first ID.

Attacked from outside as issue 39 (items 6 and 7) describes: a role that may not write the id
column moves its temporary sequence onto another holder's node, ahead of the clock, and sets
the session switch by hand; a role leaves the same behind for the next role of a backend that
switches roles per request without a reset."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from idfields.coordination import LeaseSource
from idfields.generators import make_generator
from idfields.layouts import SNOWFLAKE
from tests.dbapi_database import DbApiDatabase
from tests.pg.conftest import (
    BOTH_PATHS,
    Connect,
    drop_role,
    function_calls,
    grant_as_documented,
    single_row_inserts,
)

EPOCH_MS = 1_704_067_200_000
# The window's lead over the clock: an eighth of a lease (250 ms), twice that for slack.
WINDOW_MS = 500


# Both hot paths: PL/pgSQL and C (idfields_native, pgext/), which reads the same window.
PATHS = BOTH_PATHS


@pytest.fixture
def rows_table(connect: Connect) -> Iterator[str]:
    """A table keyed by the database default, as an application declares it."""
    admin = connect()
    table = f"window_rows_{secrets.token_hex(3)}"
    admin.execute(
        sql.SQL(
            "CREATE TABLE {} (id bigint PRIMARY KEY DEFAULT idfields.next_snowflake(), "
            "body text, who text)"
        ).format(sql.Identifier(table))
    )
    yield table
    admin.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(table)))


def ids_in(conn: psycopg.Connection[Any], table: str, who: str) -> list[int]:
    query = sql.SQL("SELECT id FROM {} WHERE who = %s").format(sql.Identifier(table))
    return [int(row[0]) for row in conn.execute(query, [who]).fetchall()]


def clock_tick(conn: psycopg.Connection[Any]) -> int:
    return int(conn.execute("SELECT idfields.clock_ms()").fetchone()[0]) - EPOCH_MS


def move_the_session_onto(conn: psycopg.Connection[Any], node: int, ahead_ms: int) -> None:
    """What a role may try on its own session: its temporary sequence moved to ``node``,
    ``ahead_ms`` ahead of the clock (denied where only the owner writes it), the switch set for
    the session (not the transaction), and the claim and limit settings rewritten to match."""
    tick = clock_tick(conn) + ahead_ms
    with contextlib.suppress(psycopg.errors.InsufficientPrivilege):
        conn.execute(
            "SELECT setval('pg_temp.idfields_snowflake', (%s::bigint << 22) | (%s::bigint << 12))",
            [tick, node],
        )
    oid = conn.execute("SELECT 'pg_temp.idfields_snowflake'::regclass::oid").fetchone()[0]
    lease = conn.execute("SELECT to_regclass('idfields_node_lease')::oid").fetchone()[0]
    conn.execute("SELECT set_config('idfields.snowflake', %s, false)", [str(oid)])
    conn.execute(
        "SELECT set_config('idfields.snowflake_lease', %s, false)",
        [f"{node}:0:{EPOCH_MS + tick + 60_000}:{oid}:0:{lease}"],
    )
    conn.execute("SELECT set_config('idfields.snowflake_limit', %s, false)", [str(tick + 60_000)])


@pytest.fixture
def victim_app(postgres_url: str, db_kwargs: dict[str, object]) -> Iterator[int]:
    """An app process holding a snowflake node through the lease table of the database the test
    connects to; yields its node."""
    url = f"{postgres_url.rsplit('/', 1)[0]}/{db_kwargs['dbname']}"
    database = DbApiDatabase("postgresql", url)
    generator = make_generator("snowflake", LeaseSource(database, ttl_s=10))
    generator()
    node = int(generator.node["node"])
    yield node
    generator.close()
    database.close()


@PATHS
@pytest.mark.parametrize("window", ["owner's", "planted"])
def test_a_role_that_may_not_write_the_id_column_does_not_choose_its_rows_ids(
    connect: Connect, app_role: str, rows_table: str, victim_app: int, window: str
) -> None:
    """The documented grants plus INSERT (body, who): the role reads the victim's node from
    idfields.node_holders, moves its session onto it 3 s ahead and inserts 10,000 rows, 2,000 a
    statement (with its own temporary window sequence in place of the owner's, planted after
    DISCARD TEMP, in the second case). Unguarded, 10,000 of 10,000 rows landed on the victim's
    node 3 s ahead."""
    admin = connect()
    table = sql.Identifier(rows_table)
    admin.execute(
        sql.SQL("GRANT INSERT (body, who) ON {} TO {}").format(table, sql.Identifier(app_role))
    )
    attacker = connect(user=app_role)
    insert = sql.SQL("INSERT INTO {} (body, who) SELECT 'x', 'attacker' "
                     "FROM generate_series(1, %s::integer)").format(table)  # fmt: skip
    attacker.execute(insert, [1])
    [(node,)] = attacker.execute(
        "SELECT node FROM idfields.node_holders WHERE layout = 'snowflake' AND kind = 'app'"
    ).fetchall()
    assert node == victim_app
    if window == "planted":
        attacker.execute("DISCARD TEMP")
        attacker.execute("CREATE TEMPORARY SEQUENCE idfields_snowflake MINVALUE -1 START -1")
        attacker.execute('CREATE TEMPORARY SEQUENCE "idfields:snowflake" MINVALUE -1 START -1')
        tick = clock_tick(attacker) + 3000
        attacker.execute(
            """SELECT setval('pg_temp."idfields:snowflake"', (%s::bigint << 22)"""
            " | (%s::bigint << 12) | 4095)",
            [tick + 60_000, node],
        )
    for batch in range(5):  # 2,000 rows a statement, each in a tick of its own
        move_the_session_onto(attacker, node, 3000 + batch)
        with contextlib.suppress(psycopg.Error):  # refused: nothing issued
            attacker.execute(insert, [2000])
    now = clock_tick(admin)
    ids = ids_in(admin, rows_table, "attacker")
    on_victims_node = [i for i in ids if (i >> 12) & 1023 == victim_app]
    ahead = [i for i in ids if (i >> 22) > now + WINDOW_MS]
    assert (len(on_victims_node), len(ahead)) == (0, 0)


@pytest.fixture
def two_roles(
    connect: Connect, db_kwargs: dict[str, object], rows_table: str
) -> Iterator[list[str]]:
    """Two roles with the documented grants and INSERT on the table, which a backend switches to
    per request (SET ROLE) with nothing reset between."""
    admin = connect()
    roles = [f"idfields_request_{secrets.token_hex(3)}" for _ in range(2)]
    for role in roles:
        admin.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(role)))
        grant_as_documented(admin, role, str(db_kwargs["dbname"]))
        admin.execute(
            sql.SQL("GRANT INSERT ON {} TO {}").format(
                sql.Identifier(rows_table), sql.Identifier(role)
            )
        )
    yield roles
    for role in roles:
        drop_role(admin, role)


@PATHS
def test_the_next_role_of_a_backend_that_switches_roles_issues_only_on_its_node(
    connect: Connect, rows_table: str, two_roles: list[str]
) -> None:
    """One role's request leaves its session moved onto the node another backend holds, 2.9 s
    ahead, and the switch set for the session; the next role's request inserts 4,000 rows with
    the default. Unguarded, 4,000 of 4,000 landed on the other backend's node 2.9 s ahead."""
    victim = connect()
    victim_node = (
        int(victim.execute("SELECT idfields.next_snowflake()").fetchone()[0]) >> 12
    ) & 1023
    backend = connect()
    table = sql.Identifier(rows_table)
    backend.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(two_roles[0])))
    backend.execute(sql.SQL("INSERT INTO {} (who) VALUES ('first')").format(table))
    move_the_session_onto(backend, victim_node, 2900)
    backend.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(two_roles[1])))
    backend.execute(
        sql.SQL("INSERT INTO {} (who) SELECT 'second' FROM generate_series(1, 4000)").format(table)
    )
    admin = connect()
    now = clock_tick(admin)
    ids = ids_in(admin, rows_table, "second")
    on_victims_node = [i for i in ids if (i >> 12) & 1023 == victim_node]
    ahead = [i for i in ids if (i >> 22) > now + WINDOW_MS]
    assert (len(ids), len(on_victims_node), len(ahead)) == (4000, 0, 0)


def test_the_window_is_the_owners_and_read_only_to_the_role(
    connect: Connect, app_role: str
) -> None:
    conn = connect(user=app_role)
    conn.execute("SELECT idfields.next_snowflake()")
    owner = connect().execute("SELECT current_user").fetchone()[0]
    row = conn.execute(
        """SELECT pg_get_userbyid(c.relowner), has_sequence_privilege(c.oid, 'SELECT'),
               has_sequence_privilege(c.oid, 'UPDATE'), has_sequence_privilege(c.oid, 'USAGE')
           FROM pg_class AS c WHERE c.oid = 'pg_temp."idfields:snowflake"'::regclass"""
    ).fetchone()
    assert row == (owner, True, False, False)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("""SELECT setval('pg_temp."idfields:snowflake"', 1)""")


def test_a_transactions_first_id_makes_no_plpgsql_call(counted: psycopg.Connection) -> None:
    """100 single-row transactions inside the window the session holds: the issuer ran for each
    one's first ID (100 of 100) where the session's claim was checked per transaction."""
    single_row_inserts(counted, 1)  # claims
    before = function_calls(counted, "issue_snowflake")
    single_row_inserts(counted, 100)
    # a renewal, twice a second at most, goes through the issuer (the window and position are
    # bound when a statement is planned)
    assert function_calls(counted, "issue_snowflake") - before <= 10


def test_a_prepared_insert_goes_on_after_discard_temp_on_the_backends_node(
    connect: Connect,
) -> None:
    """A prepared statement bound to the session's sequences is planned again when DISCARD TEMP
    drops them, and takes the backend's own node back (D2)."""
    conn = connect(prepare_threshold=0)
    conn.execute(
        "CREATE TEMPORARY TABLE prepared_rows (id bigint DEFAULT idfields.next_snowflake())"
    )
    insert = "INSERT INTO prepared_rows DEFAULT VALUES RETURNING id"
    first = [int(conn.execute(insert).fetchone()[0]) for _ in range(3)]
    conn.execute("DISCARD TEMP")
    conn.execute(
        "CREATE TEMPORARY TABLE prepared_rows (id bigint DEFAULT idfields.next_snowflake())"
    )
    after = [int(conn.execute(insert).fetchone()[0]) for _ in range(3)]
    nodes = {SNOWFLAKE.decode(i).values["node"] for i in first + after}
    assert len(nodes) == 1 and after[0] > first[-1]


def _in_ranges(ids: list[int], ranges: list[tuple[int, int]]) -> int:
    return sum(any(first <= i <= last for first, last in ranges) for i in ids)


def take_ranges(conn: psycopg.Connection[Any], n: int) -> list[tuple[int, int]]:
    """``n`` IDs of take_snowflake_ranges(n): as ranges, they run ahead of the clock."""
    rows = conn.execute(
        "SELECT first_id, last_id FROM idfields.take_snowflake_ranges(%s)", [n]
    ).fetchall()
    return [(int(first), int(last)) for first, last in rows]


@BOTH_PATHS
def test_a_role_sharing_the_backend_never_gets_ids_another_role_received(
    connect: Connect, rows_table: str, two_roles: list[str]
) -> None:
    """One role's request takes 1,000,000 IDs with take_snowflake_ranges (the position runs
    about 250 ms ahead of the clock); the next role on the same backend moves the session's
    position back to the first of them with setval() and inserts 20,000 rows by its table's
    DEFAULT. With a position every role may write: 20,000 of 20,000 were the first role's."""
    backend = connect()
    backend.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(two_roles[0])))
    received = take_ranges(backend, 1_000_000)
    backend.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(two_roles[1])))
    with contextlib.suppress(psycopg.errors.InsufficientPrivilege):
        backend.execute("SELECT setval('pg_temp.idfields_snowflake', %s)", [received[0][0] - 1])
    backend.execute(
        sql.SQL("INSERT INTO {} (who) SELECT 'second' FROM generate_series(1, 20000)").format(
            sql.Identifier(rows_table)
        )
    )
    taken = ids_in(connect(), rows_table, "second")
    assert (len(taken), _in_ranges(taken, received)) == (20_000, 0)


def test_a_position_another_role_planted_is_never_issued_from(
    connect: Connect, rows_table: str, two_roles: list[str]
) -> None:
    """A role of a fresh backend makes pg_temp.idfields_snowflake itself, writable by every
    role, before any ID; the next role's request takes 1,000,000 IDs by take_snowflake_ranges;
    the first role moves the planted position back to the first of them and inserts 500 rows.
    Issued from the planted position: 500 of 500 repeated; refused (55000, naming DISCARD
    TEMP), nothing is issued from it."""
    backend = connect()
    backend.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(two_roles[0])))
    backend.execute("CREATE TEMPORARY SEQUENCE idfields_snowflake MINVALUE -1 START -1")
    backend.execute("GRANT ALL ON SEQUENCE pg_temp.idfields_snowflake TO PUBLIC")
    backend.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(two_roles[1])))
    received: list[tuple[int, int]] = []
    refusals = 0
    try:
        received = take_ranges(backend, 1_000_000)
    except psycopg.errors.ObjectNotInPrerequisiteState as refused:
        assert "DISCARD TEMP" in str(refused.diag.message_hint)
        refusals += 1
    backend.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(two_roles[0])))
    if received:
        backend.execute("SELECT setval('pg_temp.idfields_snowflake', %s)", [received[0][0] - 1])
    with contextlib.suppress(psycopg.errors.ObjectNotInPrerequisiteState):
        backend.execute(
            sql.SQL("INSERT INTO {} (who) SELECT 'planter' FROM generate_series(1, 500)").format(
                sql.Identifier(rows_table)
            )
        )
    repeated = _in_ranges(ids_in(connect(), rows_table, "planter"), received)
    assert (repeated, refusals) == (0, 1)


@pytest.fixture
def decimal_roles(connect: Connect, two_roles: list[str]) -> list[str]:
    """:func:`two_roles`, with a launch recorded (DecimalId needs one)."""
    connect().execute(
        "INSERT INTO public.idfields_launch VALUES (1, 'test', now()) ON CONFLICT DO NOTHING"
    )
    return two_roles


def test_a_caller_never_chooses_its_decimal_ids(connect: Connect, decimal_roles: list[str]) -> None:
    """One role's request takes 100 decimal IDs; the next role on the backend moves the
    session's decimal position back with setval() and takes 100, then points the transaction's
    switch idfields.decimal at a sequence of its own, set to an ID of its choosing. With a
    position every role may write and a switch next_decimal() trusted: 99 of the 100
    repeated, and the chosen ID issued."""
    backend = connect()
    backend.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(decimal_roles[0])))
    query = "SELECT idfields.next_decimal() FROM generate_series(1, %s)"
    received = [int(row[0]) for row in backend.execute(query, [100]).fetchall()]
    backend.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(decimal_roles[1])))
    with contextlib.suppress(psycopg.errors.InsufficientPrivilege):
        backend.execute("SELECT setval('pg_temp.idfields_decimal', %s)", [received[0]])
    again = [int(row[0]) for row in backend.execute(query, [100]).fetchall()]
    chosen = 424_242 * 10_000_000_000 + received[0] % 10_000_000_000
    backend.execute("CREATE TEMPORARY SEQUENCE chooser MINVALUE 0")
    backend.execute("SELECT setval('chooser', %s)", [chosen - 10_000_000_000 - 1])
    backend.execute("SELECT nextval('chooser')")
    with backend.transaction():
        backend.execute(
            "SELECT set_config('idfields.decimal', 'chooser'::regclass::oid::text, true)"
        )
        picked = int(backend.execute("SELECT idfields.next_decimal()").fetchone()[0])
    assert (len(set(received) & set(again)), picked == chosen) == (0, False)
