"""The database-side functions against what operations do to them: a pooler's DISCARD TEMP, a
hostile search_path, role switches, a role with exactly the documented grants, stray test-hook
calls, claims beside open transactions, lease tables in another schema, the caller's lastval(),
a claim rolled back with a savepoint, read-only transactions.

Each docstring says what goes wrong when the guard the test covers is missing.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from databases import DbUrl
from dbapi_database import DbApiDatabase
from psycopg import sql

from idfields import NodeError, make_generator
from idfields import sql as idsql
from idfields.coordination import LeaseSource
from idfields.coordination._leases import lease_lock_key
from idfields.layouts import SNOWFLAKE
from idfields.migrations import convert
from idfields.sql.layouts import render_layout_function
from tests.pg.conftest import (
    BOTH_PATHS,
    drop_role,
    end_window,
    fill_but,
    grant_as_documented,
    install_as_plain_owner,
    install_layouts,
)
from tests.pg.sample_layouts import NARROW, WRAPPING

EPOCH_MS = 1_704_067_200_000


def ids_of(conn: psycopg.Connection, function: str, n: int) -> list[int]:
    """``n`` IDs of ``idfields.<function>()`` in one statement (no operator of the caller's)."""
    query = sql.SQL("SELECT idfields.{}() FROM pg_catalog.generate_series(1, {})").format(
        sql.Identifier(function), sql.Literal(n)
    )
    return [row[0] for row in conn.execute(query).fetchall()]


def ids_at(conn: psycopg.Connection, hook: str, tick: int, n: int) -> list[int]:
    """``n`` IDs of the test hook ``idfields.<hook>(tick)``: a frozen clock."""
    query = sql.SQL("SELECT idfields.{}({}) FROM pg_catalog.generate_series(1, {})").format(
        sql.Identifier(hook), sql.Literal(tick), sql.Literal(n)
    )
    return [row[0] for row in conn.execute(query).fetchall()]


def repeats(ids: list[int]) -> int:
    return len(ids) - len(set(ids))


@pytest.fixture(scope="module", autouse=True)
def user_layouts(pg_kwargs: dict[str, object]) -> None:
    install_layouts(pg_kwargs, NARROW, WRAPPING)


# -- 1. a pooler's reset ------------------------------------------------------------------------


@pytest.mark.parametrize("reset", ["DISCARD TEMP", "DROP SEQUENCE pg_temp.idfields_{layout}"])
@pytest.mark.parametrize(("layout", "per_round"), [("snowflake", 20), ("narrow", 50)])
@pytest.mark.parametrize("frozen", [True, False], ids=["frozen-clock", "clock"])
def test_a_lost_position_never_repeats_ids(
    connect: Any, reset: str, layout: str, per_round: int, frozen: bool
) -> None:
    """Unguarded, 150 rounds: frozen clock, snowflake 2,980 repeats of 3,000 and narrow (16 IDs
    a ms) 7,450 of 7,500; real clock, narrow 2-3 of 7,500 on a loaded machine (snowflake by
    chance: 35 of 3,000 in the audit). DISCARD TEMP and DROP SEQUENCE alike."""
    conn = connect()
    tick = conn.execute("SELECT idfields.clock_ms() - %s", [EPOCH_MS]).fetchone()[0] + 5
    ids: list[int] = []
    try:
        for _ in range(150):
            if frozen:
                ids += ids_at(conn, f"next_{layout}_at", tick, per_round)
            else:
                ids += ids_of(conn, f"next_{layout}", per_round)
            conn.execute(reset.format(layout=layout).encode())
    finally:
        conn.execute("RESET ALL")
    assert repeats(ids) == 0


def test_a_reset_inside_a_transaction_never_repeats(connect: Any) -> None:
    conn = connect(autocommit=False)
    first = ids_of(conn, "next_snowflake", 10)
    conn.execute("DISCARD TEMP")
    # planned again on the session's new sequences: the backend takes its row back past its limit
    again = ids_of(conn, "next_snowflake", 10)
    conn.rollback()  # the old sequences are back, with their old window
    assert repeats(first + again + ids_of(conn, "next_snowflake", 10)) == 0


# -- 2. a hostile search_path -------------------------------------------------------------------

OPERATORS = ["&", "|", "#", "<<", ">>", "+", "-", "*", "/", "%", "=", "<>", "<", ">", "<=", ">="]
OPERATORS += ["||"]
TYPE_PAIRS = [
    ("bigint", "integer"),
    ("integer", "bigint"),
    ("bigint", "bigint"),
    ("integer", "integer"),
    ("text", "integer"),
    ("text", "bigint"),
    ("text", "text"),
    ("bigint", "numeric"),
    ("numeric", "bigint"),
    ("double precision", "integer"),
    ("timestamptz", "interval"),
    ("bigint", "interval"),
    ("interval", "bigint"),
    ("oid", "oid"),
    ("name", "name"),
    ("regclass", "regclass"),
]
# Functions the SQL calls, planted under the same names and argument types.
FUNCTIONS = [
    ("current_setting", "text, boolean"),
    ("current_setting", "text"),
    ("nextval", "regclass"),
    ("currval", "regclass"),
    ("setval", "regclass, bigint"),
    ("lastval", ""),
    ("to_regclass", "text"),
    ("clock_timestamp", ""),
    ("date_part", "text, timestamptz"),
    ("md5", "text"),
    ("substr", "text, integer, integer"),
    ("split_part", "text, text, integer"),
    ("format", "text, text"),
    ("set_config", "text, text, boolean"),
    ("pg_backend_pid", ""),
    ("timezone", "text, timestamp"),
    ("to_timestamp", "double precision"),
    ("pg_sequence_last_value", "regclass"),
    ("int8larger", "bigint, bigint"),
    ("pg_get_userbyid", "oid"),
    ("pg_is_in_recovery", ""),
    ("oideq", "oid, oid"),
]


def plant(admin: psycopg.Connection, schema: str) -> None:
    """Operators and functions in ``schema`` that raise when they run, usable by anyone."""
    name = sql.Identifier(schema)
    admin.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO PUBLIC").format(name))
    for i, (left, right) in enumerate(TYPE_PAIRS):
        for j, op in enumerate(OPERATORS):
            boolean = op in {"=", "<>", "<", ">", "<=", ">="}
            function = sql.Identifier(f"hostile_op_{i}_{j}")
            admin.execute(
                sql.SQL(
                    "CREATE FUNCTION {s}.{f}(a {l}, b {r}) RETURNS {t} LANGUAGE plpgsql AS "
                    "$$ BEGIN RAISE EXCEPTION 'hostile operator % ran', {op}; END $$"
                ).format(
                    s=name,
                    f=function,
                    l=sql.SQL(left),
                    r=sql.SQL(right),
                    t=sql.SQL("boolean" if boolean else left),
                    op=sql.Literal(op),
                )
            )
            admin.execute(
                sql.SQL(
                    "CREATE OPERATOR {s}.{op} (LEFTARG = {l}, RIGHTARG = {r}, FUNCTION = {s}.{f})"
                ).format(s=name, op=sql.SQL(op), l=sql.SQL(left), r=sql.SQL(right), f=function)
            )
    for function, arguments in FUNCTIONS:
        admin.execute(
            sql.SQL(
                "CREATE FUNCTION {s}.{f}({a}) RETURNS text LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'hostile function % ran', {n}; END $$"
            ).format(
                s=name, f=sql.Identifier(function), a=sql.SQL(arguments), n=sql.Literal(function)
            )
        )


def unplant(admin: psycopg.Connection, schema: str) -> None:
    rows = admin.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n "
        "ON n.oid = p.pronamespace WHERE n.nspname = %s AND p.proname LIKE 'hostile_op_%%' "
        "OR n.nspname = %s AND p.prosrc LIKE '%%hostile function%%'",
        [schema, schema],
    ).fetchall()
    for (signature,) in rows:
        admin.execute(f"DROP FUNCTION {signature} CASCADE".encode())


CALLS = [
    "idfields.next_snowflake()",
    "idfields.next_traceid()",
    "idfields.next_decimal()",
    "idfields.next_narrow()",
    "idfields.next_wrapping()",
    "(SELECT pg_catalog.count(*) FROM idfields.take_snowflake(5000))",
    "(SELECT pg_catalog.count(*) FROM idfields.take_traceid(5))",
    "(SELECT pg_catalog.count(*) FROM idfields.take_narrow(40))",
    "(SELECT pg_catalog.count(*) FROM idfields.take_snowflake_ranges(5000))",
    "(SELECT pg_catalog.count(*) FROM idfields.take_traceid_ranges(5))",
    "(SELECT pg_catalog.count(*) FROM idfields.take_narrow_ranges(40))",
    "(idfields.decode_snowflake(384027384216551424)).node",
    "(idfields.decode_traceid(384027384216551424)).node_no",
    "(idfields.decode_traceid(384027384216551424, pg_catalog.clock_timestamp())).counter",
    "(idfields.decode_decimal(384027384216551424)).launch_id",
    "(idfields.decode_narrow(384027384216551424)).in_layout",
    "(idfields.decode_wrapping(384027384216551424)).in_layout",
]


@pytest.fixture
def hostile_schema(connect: Any) -> Iterator[str]:
    admin = connect()
    schema = f"hostile_{secrets.token_hex(3)}"
    admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        plant(admin, schema)
        plant(admin, "public")
        yield schema
    finally:
        unplant(admin, "public")
        admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


@BOTH_PATHS
@pytest.mark.parametrize("as_superuser", [True, False], ids=["superuser", "app-role"])
@pytest.mark.parametrize("pg_catalog_later", [False, True], ids=["implicit", "explicit"])
def test_no_operator_or_function_of_the_search_path_ever_runs(
    connect: Any, app_role: str, hostile_schema: str, as_superuser: bool, pg_catalog_later: bool
) -> None:
    """Unguarded: 'hostile operator & ran' at the first call (next_snowflake), for every role."""
    path = f"{hostile_schema},{'pg_catalog,' if pg_catalog_later else ''}public"
    conn = connect(**({} if as_superuser else {"user": app_role}), options=f"-c search_path={path}")
    for _ in range(2):  # the first claims nodes (slow path), the second goes on (hot path)
        for call in CALLS:
            conn.execute(f"SELECT {call}".encode())
        conn.execute("SELECT idfields.next_snowflake() FROM pg_catalog.generate_series(1, 5000)")


@pytest.fixture
def conversion_tables(connect: Any, app_role: str) -> Iterator[str]:
    """A serial key and a table referencing it, in a schema of their own, writable by the app
    role (the online conversion's sync triggers fire on its writes)."""
    admin = connect()
    schema = f"conv_{secrets.token_hex(3)}"
    names = {"s": sql.Identifier(schema), "r": sql.Identifier(app_role)}
    for statement in (
        "CREATE SCHEMA {s}",
        "CREATE TABLE {s}.item (id serial PRIMARY KEY, label text)",
        "CREATE TABLE {s}.item_tags (item_id integer NOT NULL REFERENCES {s}.item (id), "
        "tag integer)",
        "INSERT INTO {s}.item (label) SELECT 'old' FROM pg_catalog.generate_series(1, 200)",
        "INSERT INTO {s}.item_tags SELECT id, 1 FROM {s}.item",
        "GRANT USAGE ON SCHEMA {s} TO {r}",
        "GRANT ALL ON ALL TABLES IN SCHEMA {s} TO {r}",
        "GRANT ALL ON ALL SEQUENCES IN SCHEMA {s} TO {r}",
    ):
        admin.execute(sql.SQL(statement).format(**names))
    yield schema
    admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


@pytest.mark.parametrize("migrator_path", [0, 1], ids=["catalog-implicit", "catalog-after"])
def test_no_operator_or_function_of_the_search_path_runs_in_an_online_conversion(
    connect: Any, app_role: str, hostile_schema: str, conversion_tables: str, migrator_path: int
) -> None:
    """The sync triggers fire on writes by an app role and a superuser whose search_path puts
    the hostile schema first (pg_catalog implicit, and explicit after it); the migration itself
    runs with the hostile schema first too. Every planted operator and function raises. The
    triggers passed as first written (NEW.x := NEW.y names no operator; the int-to-bigint
    assignment is a pg_cast lookup). The migration did not, with pg_catalog explicit after the
    hostile schema: introspection's '||' ran the planted operator as the migrating superuser."""
    paths = [f"{hostile_schema},public", f"{hostile_schema},pg_catalog,public"]
    writers = [
        connect(**user, options=f"-c search_path={path}")
        for user in ({}, {"user": app_role})
        for path in paths
    ]
    table = sql.SQL("{}.{}").format(sql.Identifier(conversion_tables), sql.Identifier("item"))
    tags = sql.SQL("{}.{}").format(sql.Identifier(conversion_tables), sql.Identifier("item_tags"))

    def write(step: str) -> None:
        if step == "swap":  # the triggers are gone, the key is the app's (generation="app")
            return
        for conn in writers:
            new = conn.execute(
                sql.SQL("INSERT INTO {} (label) VALUES ('live') RETURNING id").format(table)
            ).fetchone()[0]
            conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, 2)").format(tags), [new])
            conn.execute(
                sql.SQL("UPDATE {} SET label = 'edited' WHERE id = %s").format(table), [new // 2]
            )
            conn.execute(sql.SQL("UPDATE {} SET tag = 3 WHERE item_id = %s").format(tags), [new])

    with pytest.raises(psycopg.errors.RaiseException, match="hostile operator & ran"):
        writers[1].execute("SELECT 1::bigint & 1::integer")  # the plant is live
    migrator = connect(options=f"-c search_path={paths[migrator_path]}")

    def execute(statement: str) -> list[tuple[Any, ...]]:
        cursor = migrator.execute(statement.encode())
        return cursor.fetchall() if cursor.description else []

    info = convert.introspect(
        "postgresql",
        lambda q, p: migrator.execute(q.encode(), p).fetchall(),
        "item",
        schema=conversion_tables,
    )
    path_before = migrator.execute("SHOW search_path").fetchone()[0]
    convert.run_online(execute, info, convert.Target.of("snowflake", "app"), after_step=write)
    assert migrator.execute("SHOW search_path").fetchone()[0] == path_before  # put back
    admin = connect()
    count, distinct = admin.execute(
        sql.SQL("SELECT pg_catalog.count(*), pg_catalog.count(DISTINCT id) FROM {}").format(table)
    ).fetchone()
    assert count == distinct > 200
    kind = admin.execute(
        "SELECT pg_catalog.format_type(atttypid, NULL) FROM pg_catalog.pg_attribute "
        "WHERE attrelid = %s::regclass AND attname = 'id'",
        [f"{conversion_tables}.item"],
    )
    assert kind.fetchone() == ("bigint",)


# -- 3. role switches, and exactly the documented grants -------------------------------------------


@BOTH_PATHS
def test_role_switches_keep_issuing_increasing_ids(connect: Any, app_role: str) -> None:
    """Unguarded: 'permission denied for sequence idfields_snowflake' after SET ROLE."""
    conn = connect()
    ids = ids_of(conn, "next_snowflake", 100)
    for switch, back in (
        (f"SET ROLE {app_role}", "RESET ROLE"),
        (f"SET SESSION AUTHORIZATION {app_role}", "RESET SESSION AUTHORIZATION"),
    ):
        conn.execute(switch.encode())
        ids += ids_of(conn, "next_snowflake", 100)
        conn.execute(back.encode())
        ids += ids_of(conn, "next_snowflake", 100)
    assert ids == sorted(set(ids))


@BOTH_PATHS
def test_a_first_call_under_a_switched_role_then_another_role(connect: Any, app_role: str) -> None:
    conn = connect()
    conn.execute(f"SET ROLE {app_role}".encode())
    ids = ids_of(conn, "next_snowflake", 100)
    conn.execute("RESET ROLE")
    ids += ids_of(conn, "next_snowflake", 100)
    assert ids == sorted(set(ids))


def test_the_whole_flow_with_exactly_the_documented_grants(empty_database: DbUrl) -> None:
    """EXECUTE and TEMPORARY revoked from PUBLIC: the role has the documented grants and no more."""
    role = f"idfields_app_{secrets.token_hex(3)}"
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as admin:
        admin.execute(idsql.load(idsql.VERSION).encode())
        admin.execute(render_layout_function(NARROW)[0].encode())
        admin.execute("INSERT INTO idfields_launch VALUES (1, 'test', now())")
        admin.execute("REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA idfields FROM PUBLIC")
        database = sql.Identifier(empty_database.database)
        admin.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(database))
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        try:
            grant_as_documented(admin, role, empty_database.database)
            admin.execute(
                sql.SQL(
                    "GRANT EXECUTE ON FUNCTION idfields.next_narrow(), "
                    "idfields.window_narrow(), idfields.position_narrow(), "
                    "idfields.next_narrow_on(regclass, regclass), idfields.open_narrow(), "
                    "idfields.issue_narrow(regclass) TO {}"
                ).format(sql.Identifier(role))
            )
            with psycopg.connect(
                **empty_database.psycopg_kwargs() | {"user": role}, autocommit=True
            ) as app:
                for function in ("next_snowflake", "next_traceid", "next_decimal", "next_narrow"):
                    ids = ids_of(app, function, 3000)
                    assert ids == sorted(set(ids))
                taken = app.execute("SELECT count(*) FROM idfields.take_snowflake(10000)")
                assert taken.fetchone() == (10_000,)
                ranges = app.execute(
                    "SELECT sum(last_id - first_id + 1) FROM idfields.take_snowflake_ranges(10000)"
                )
                assert ranges.fetchone() == (10_000,)
                row = app.execute("SELECT (idfields.decode_snowflake(%s)).node", [ids[0]])
                assert row.fetchone() is not None
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    app.execute("SELECT idfields.next_snowflake_at(1)")
        finally:
            drop_role(admin, role)


def test_an_owner_without_the_table_grants_is_refused_at_install(empty_database: DbUrl) -> None:
    """The functions lease as their owner: an install by a role that may not write the lease
    table fails there, naming the grant, instead of failing every session's first ID."""
    owner = f"idfields_owner_{secrets.token_hex(3)}"
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as admin:
        name, database = sql.Identifier(owner), sql.Identifier(empty_database.database)
        admin.execute(sql.SQL("CREATE ROLE {}").format(name))
        try:
            admin.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(database, name))
            admin.execute(sql.SQL("SET ROLE {}").format(name))
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
                admin.execute(idsql.load(idsql.VERSION).encode())
            assert "lacks SELECT, INSERT, UPDATE on" in str(refused.value)
            assert "GRANT SELECT, INSERT, UPDATE ON" in str(refused.value)
            admin.execute("RESET ROLE")
        finally:
            admin.execute("RESET ROLE")
            drop_role(admin, owner)


@pytest.mark.parametrize("reads_stats", [True, False], ids=["pg_read_all_stats", "no_stats"])
def test_an_owner_that_is_no_superuser_serves_a_role_without_table_grants(
    empty_database: DbUrl, reads_stats: bool
) -> None:
    """Owner: a plain role with the table grants, with or without pg_read_all_stats; caller: the
    documented grants only (no table grant, no TEMPORARY). The caller's IDs come, across SET
    ROLE, and a reset backend keeps its node whether the owner may read the session's start
    time or not: it knows its row by its pid (with a holder that named the transaction where
    the start was unreadable: 21 nodes for 20 resets)."""
    owner, role = (f"idfields_{kind}_{secrets.token_hex(3)}" for kind in ("owner", "app"))
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as admin:
        names = {who: sql.Identifier(who) for who in (owner, role)}
        database = sql.Identifier(empty_database.database)
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(names[role]))
        try:
            install_as_plain_owner(admin, empty_database.database, owner, reads_stats=reads_stats)
            admin.execute("INSERT INTO idfields_launch VALUES (1, 'test', now())")
            grant_as_documented(admin, role, empty_database.database)
            with psycopg.connect(
                **empty_database.psycopg_kwargs() | {"user": role},
                autocommit=True,
                prepare_threshold=None,  # DISCARD ALL drops prepared statements
            ) as app:
                ids = ids_of(app, "next_snowflake", 1000)
                nodes = {SNOWFLAKE.decode(ids[-1]).values["node"]}
                for _ in range(20):
                    app.execute("DISCARD ALL")
                    ids += ids_of(app, "next_snowflake", 100)
                    nodes.add(SNOWFLAKE.decode(ids[-1]).values["node"])
                assert ids == sorted(set(ids))
                assert len(nodes) == 1
                assert len(set(ids_of(app, "next_decimal", 100))) == 100
            with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as other:
                ids = ids_of(other, "next_snowflake", 100)
                other.execute(sql.SQL("SET ROLE {}").format(names[role]))
                ids += ids_of(other, "next_snowflake", 100)
                other.execute("RESET ROLE")
                ids += ids_of(other, "next_snowflake", 100)
                assert ids == sorted(set(ids))
        finally:
            admin.execute("RESET ROLE")
            admin.execute(sql.SQL("GRANT TEMPORARY ON DATABASE {} TO PUBLIC").format(database))
            drop_role(admin, role)
            admin.execute(sql.SQL("DROP SCHEMA IF EXISTS idfields CASCADE"))
            drop_role(admin, owner)


# -- 4. test hooks and internals ----------------------------------------------------------------


def test_a_stray_hook_call_cannot_push_a_lease_years_ahead(connect: Any, app_role: str) -> None:
    """A tick given in unix ms (not ms since the epoch) would lease a node until 2080: neither
    the hook nor anything else that takes a tick is the app role's."""
    admin = connect()
    app = connect(user=app_role)
    unix_ms = admin.execute("SELECT idfields.clock_ms()").fetchone()[0]
    far_ahead = "DELETE FROM public.idfields_node_lease WHERE expires_at_ms > %s RETURNING node"
    admin.execute(far_ahead, [unix_ms + 86_400_000])  # other tests' faked clocks, not this call's
    try:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute("SELECT idfields.next_snowflake_at(%s)", [unix_ms])
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute("SELECT idfields.issue_snowflake_at(%s, NULL)", [unix_ms])
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute(
                "SELECT idfields.time_slow_path(ROW('snowflake', 'snowflake', 1704067200000000, "
                "1000, 41, 22, false, 12, 0, 1023, 12, 0, 0, 1000, 2000)::idfields.geometry, %s, "
                "NULL::regclass)",
                [unix_ms],
            )
    finally:
        far = admin.execute(far_ahead, [unix_ms + 86_400_000]).fetchall()
    assert far == []


# -- 5. claims never wait -----------------------------------------------------------------------


@pytest.fixture
def lease_rows(connect: Any) -> Iterator[psycopg.Connection]:
    admin = connect()
    yield admin
    admin.execute("DELETE FROM public.idfields_node_lease WHERE layout = 'snowflake'")


def node_claimed_beside(holder: psycopg.Connection, connect: Any) -> int:
    """The node a new connection's snowflake claims (failing after 0.5 s of lock wait) while
    ``holder``'s transaction is open; ``holder`` is rolled back afterwards."""
    try:
        value = ids_of(connect(options="-c lock_timeout=500"), "next_snowflake", 1)[0]
    finally:
        holder.rollback()
    return SNOWFLAKE.decode(value).values["node"]


def test_a_claim_skips_a_row_another_transaction_holds(
    connect: Any, lease_rows: psycopg.Connection
) -> None:
    """Unguarded: the claim waited on the locked lapsed row (lock_timeout: LockNotAvailable)."""
    fill_but(lease_rows, {5: 0, 6: 0})
    other = connect(autocommit=False)  # an app claimer between its SELECT and its UPDATE
    other.execute(
        "SELECT 1 FROM public.idfields_node_lease WHERE layout = 'snowflake' AND node = 5 "
        "FOR UPDATE"
    )
    assert node_claimed_beside(other, connect) == 6


def test_a_claim_does_not_wait_for_a_transaction_that_used_a_generator(
    connect: Any, lease_rows: psycopg.Connection
) -> None:
    fill_but(lease_rows, {5: 0, 6: 0})
    first = connect(autocommit=False)
    ids_of(first, "next_snowflake", 1)  # claims 5 (its row stays locked until commit)
    assert node_claimed_beside(first, connect) == 6


def test_a_claim_does_not_wait_for_a_transaction_recording_the_epoch(
    empty_database: DbUrl,
) -> None:
    """A new database's first claim records its epoch inside the caller's open transaction:
    another session's claim, and an app process's, go on at once (with the epoch rows written
    by a session's claim transaction: the others waited for it, until lock_timeout)."""
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as admin:
        admin.execute(idsql.load(idsql.VERSION).encode())
        admin.execute("INSERT INTO idfields_launch VALUES (1, 'v1', now())")
    first = psycopg.connect(**empty_database.psycopg_kwargs())
    try:
        first.execute("SELECT idfields.next_snowflake(), idfields.next_decimal()")
        options = "-c lock_timeout=500"
        with psycopg.connect(**empty_database.psycopg_kwargs(), options=options) as other:
            other.execute("SELECT idfields.next_snowflake(), idfields.next_decimal()")
        database = DbApiDatabase("postgresql", str(empty_database))
        try:
            LeaseSource(database).acquire(SNOWFLAKE)
        finally:
            database.close()
    finally:
        first.rollback()
        first.close()


# -- 6. the lease tables' schema ----------------------------------------------------------------


@pytest.fixture
def tenant_copy(connect: Any) -> Iterator[str]:
    admin = connect()
    schema = f"tenant_{secrets.token_hex(3)}"
    name = sql.Identifier(schema)
    admin.execute(sql.SQL("CREATE SCHEMA {}").format(name))
    admin.execute(
        sql.SQL(
            "CREATE TABLE {}.idfields_node_lease (LIKE public.idfields_node_lease INCLUDING ALL)"
        ).format(name)
    )
    yield schema
    admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(name))


@BOTH_PATHS
def test_a_second_lease_table_on_the_search_path_is_refused(connect: Any, tenant_copy: str) -> None:
    """Unguarded: the backend leased from public while the session's tables were the tenant's."""
    conn = connect(options=f"-c search_path={tenant_copy},public")
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as caught:
        ids_of(conn, "next_snowflake", 1)
    assert f"{tenant_copy}.idfields_node_lease" in str(caught.value)
    assert "public" in str(caught.value) and "lease_schema" in caught.value.diag.message_hint


def move_tables(url: DbUrl, schema: str) -> None:
    with psycopg.connect(**url.psycopg_kwargs(), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        for table in ("idfields_node_lease", "idfields_counter", "idfields_launch"):
            admin.execute(
                sql.SQL("ALTER TABLE public.{} SET SCHEMA {}").format(
                    sql.Identifier(table), sql.Identifier(schema)
                )
            )


def django_run_install(url: DbUrl, search_path: str, django_db_blocker: Any) -> None:
    from django.db.migrations.state import ProjectState
    from django.db.utils import ConnectionHandler

    from idfields.migrations.django import InstallIdFunctions

    databases = url.django_databases()
    databases["default"]["OPTIONS"] = {"options": f"-c search_path={search_path}"}
    with django_db_blocker.unblock():
        connection = ConnectionHandler(databases)["default"]
        try:
            with connection.schema_editor(atomic=False) as editor:
                InstallIdFunctions(idsql.VERSION).database_forwards(
                    "idfields", editor, ProjectState(), ProjectState()
                )
        finally:
            connection.close()


def test_the_install_finds_the_tables_in_the_apps_schema(
    empty_database: DbUrl, django_db_blocker: Any
) -> None:
    """Unguarded: installed fine, then every next_*() failed (relation public... not found)."""
    move_tables(empty_database, "app")
    django_run_install(empty_database, "app", django_db_blocker)
    kwargs = empty_database.psycopg_kwargs()
    with psycopg.connect(**kwargs, autocommit=True, options="-c search_path=app") as conn:
        assert ids_of(conn, "next_snowflake", 10)
        holders = conn.execute("SELECT holder FROM app.idfields_node_lease").fetchall()
    assert holders and holders[0][0].startswith("pg:")


def test_the_install_refuses_two_copies_on_the_search_path(
    empty_database: DbUrl, django_db_blocker: Any
) -> None:
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as admin:
        admin.execute("CREATE SCHEMA app")
        admin.execute(
            "CREATE TABLE app.idfields_node_lease (LIKE public.idfields_node_lease INCLUDING ALL)"
        )
    with pytest.raises(ValueError, match=r"2 schemas on the search_path \(app, public\)"):
        django_run_install(empty_database, "app,public", django_db_blocker)


# -- 7. lastval(), 8. savepoints, 9. read-only ---------------------------------------------------


@BOTH_PATHS
def test_the_callers_lastval_is_untouched(connect: Any) -> None:
    """Unguarded: lastval() returned the snowflake, not the serial column's value."""
    admin = connect()
    table = f"serial_beside_{secrets.token_hex(3)}"
    admin.execute(
        sql.SQL(
            "CREATE TABLE {} (n serial, id bigint PRIMARY KEY DEFAULT idfields.next_snowflake())"
        ).format(sql.Identifier(table))
    )
    try:
        for conn in (connect(), connect()):  # a fresh backend claims, then goes on
            for _ in range(3):
                n = conn.execute(
                    sql.SQL("INSERT INTO {} DEFAULT VALUES RETURNING n").format(
                        sql.Identifier(table)
                    )
                ).fetchone()[0]
                assert conn.execute("SELECT lastval()").fetchone()[0] == n
    finally:
        admin.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(table)))


def keep_an_id_of_a_rolled_back_claim(
    conn: psycopg.Connection, lease_rows: psycopg.Connection
) -> tuple[int, int]:
    """``conn`` claims node 7 inside a savepoint that rolls back and keeps the ID issued on it
    (the lease row is back to lapsed; the backend keeps its advisory lock on 7). Every other
    snowflake node is held. Returns the kept ID and the frozen tick it was issued at."""
    fill_but(lease_rows, {6: -3, 7: -1})
    assert SNOWFLAKE.decode(ids_of(conn, "next_snowflake", 1)[0]).values["node"] == 6
    conn.execute("RESET ALL")  # the claim is forgotten; the position stays
    end_window(conn, "snowflake")  # and the window ends, as when the lease lapses
    lease_rows.execute(  # and an app process holds node 6 now
        "UPDATE public.idfields_node_lease SET holder = 'app:other', expires_at_ms = %s "
        "WHERE layout = 'snowflake' AND node = 6",
        [2**62],
    )
    tick = conn.execute("SELECT idfields.clock_ms() - %s", [EPOCH_MS]).fetchone()[0] + 10
    conn.execute(  # a claim of node 7 inside a savepoint that rolls back; its ID is kept
        "CREATE TEMPORARY TABLE kept (id bigint);"
        "DO $$ DECLARE v bigint; BEGIN"
        "  BEGIN v := idfields.next_snowflake_at(TICK); PERFORM 1 / 0;"
        "  EXCEPTION WHEN division_by_zero THEN NULL; END;"
        "  INSERT INTO kept VALUES (v);"
        "END $$;".replace("TICK", str(tick)).encode()
    )
    kept = conn.execute("SELECT id FROM kept").fetchone()[0]
    assert SNOWFLAKE.decode(kept).values["node"] == 7
    return kept, tick


@BOTH_PATHS
def test_an_id_kept_from_a_rolled_back_savepoint_claim_keeps_its_node(
    connect: Any, lease_rows: psycopg.Connection
) -> None:
    """Unguarded: at its next call the backend let node 7 go for an older lapsed row, and
    another backend claimed 7 and issued the kept ID again, with no fence."""
    conn = connect()
    kept, tick = keep_an_id_of_a_rolled_back_claim(conn, lease_rows)
    lease_rows.execute(  # an older lapsed row, first in the claim order
        "UPDATE public.idfields_node_lease SET expires_at_ms = -5 "
        "WHERE layout = 'snowflake' AND node = 8"
    )
    again = conn.execute("SELECT idfields.next_snowflake_at(%s)", [tick]).fetchone()[0]
    theirs = connect().execute("SELECT idfields.next_snowflake_at(%s)", [tick]).fetchone()[0]
    assert theirs not in {kept, again}
    assert again > kept and SNOWFLAKE.decode(again).values["node"] == 7


def test_an_app_claim_skips_the_node_of_an_id_kept_from_a_rolled_back_claim(
    connect: Any, lease_rows: psycopg.Connection, postgres_url: str
) -> None:
    """A claim rolled back leaves node 7's lease row lapsed, yet an ID of it was kept: an app
    process must skip node 7 (its only free node), or it would claim it behind the old fence
    and could repeat the kept ID."""
    conn = connect()
    keep_an_id_of_a_rolled_back_claim(conn, lease_rows)
    database = DbApiDatabase("postgresql", postgres_url)
    try:
        with pytest.raises(NodeError, match="no free node"):
            LeaseSource(database).acquire(SNOWFLAKE)  # 7 is the only lapsed row: skipped
        lease_rows.execute(
            "UPDATE public.idfields_node_lease SET expires_at_ms = -1 "
            "WHERE layout = 'snowflake' AND node = 9"
        )
        generator = make_generator("snowflake", LeaseSource(database))
        try:
            assert SNOWFLAKE.decode(generator()).values["node"] == 9
        finally:
            generator.close()
    finally:
        database.close()


def test_the_apps_lock_key_is_the_sql_functions(connect: Any) -> None:
    keys = ["snowflake", "traceid", NARROW.lease_key, WRAPPING.lease_key, "naïve#ab12"]
    conn = connect()
    for key in keys:
        row = conn.execute("SELECT idfields.lease_lock_key(%s)", [key]).fetchone()
        assert row == (lease_lock_key(key),)


@BOTH_PATHS
@pytest.mark.parametrize("function", ["next_snowflake", "next_decimal", "next_narrow"])
def test_a_read_only_transaction_gets_an_idfields_error(connect: Any, function: str) -> None:
    """Unguarded: 'cannot execute CREATE SEQUENCE in a read-only transaction'."""
    conn = connect(autocommit=False)
    conn.execute("SET TRANSACTION READ ONLY")
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction) as caught:
        ids_of(conn, function, 1)
    assert str(caught.value).startswith("idfields: cannot issue")
    assert "read-write" in caught.value.diag.message_hint
