"""The C extension idfields_native (pgext/): the same IDs as the PL/pgSQL functions from the
same state, the same leases and refusals, wired in and out of next_snowflake()/next_traceid()
by the install, and nothing a caller could forge. The hardening tests that run on both paths
carry ``BOTH_PATHS`` in their own modules."""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from databases import DbUrl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql as pgsql

from idfields import sql
from tests.pg.conftest import (
    BOTH_PATHS,
    Connect,
    Pair,
    as_a_database_of_its_own,
    drop_role,
    end_window,
    function_calls,
    grant_as_documented,
    install_as_plain_owner,
    run_in_threads,
    single_row_inserts,
    wait_for_replay,
)

NATIVE = pytest.mark.parametrize("db_kwargs", ["native"], indirect=True)
# The clock's tick of each layout, as the SQL reads it.
TICK = {
    "snowflake": "SELECT idfields.clock_ms() - 1704067200000",
    "traceid": "SELECT idfields.clock_ms() / 1000",
}
NODE = {"snowflake": lambda i: (i >> 12) & 1023, "traceid": lambda i: (i >> 22) & 65535}


def hook_ids(
    conn: psycopg.Connection[Any], schema: str, layout: str, tick: int, n: int
) -> list[int]:
    """``n`` IDs of ``<schema>.next_<layout>_at(tick)`` in one statement."""
    query = pgsql.SQL("SELECT {}.{}(%s) FROM pg_catalog.generate_series(1, %s)").format(
        pgsql.Identifier(schema), pgsql.Identifier(f"next_{layout}_at")
    )
    return [int(row[0]) for row in conn.execute(query, [tick, n]).fetchall()]


class State:
    """A session's whole position in a layout: its sequence's last value, its window, its claim
    and limit settings, its lease row and its node's durable fence (a renewal or a new traceid tick
    starts at the fence: a replay behind a fence the first run raised would start later);
    put back as it was between two runs of the same calls."""

    def __init__(self, conn: psycopg.Connection[Any], layout: str) -> None:
        self.layout = layout
        self.last, self.claim, self.limit = conn.execute(
            "SELECT pg_sequence_last_value(to_regclass(%s)), current_setting(%s), "
            "current_setting(%s)",
            [f"pg_temp.idfields_{layout}", f"idfields.{layout}_lease", f"idfields.{layout}_limit"],
        ).fetchone()
        self.row = conn.execute(
            "SELECT node, holder, acquired_at_ms, expires_at_ms FROM idfields_node_lease "
            "WHERE layout = %s AND node = %s",
            [layout, int(self.claim.split(":")[0])],
        ).fetchone()
        self.window = conn.execute(
            "SELECT pg_sequence_last_value(to_regclass(%s))", [f'pg_temp."idfields:{layout}"']
        ).fetchone()[0]
        self.fence = conn.execute(
            "SELECT f, pg_sequence_last_value(f) FROM (SELECT "
            "idfields.fence_sequence(idfields.lease_lock_key(%s), %s) AS f) AS b",
            [layout, int(self.claim.split(":")[0])],
        ).fetchone()

    def restore(self, conn: psycopg.Connection[Any]) -> None:
        layout = self.layout
        conn.execute(
            "SELECT setval(to_regclass(%s), %s), set_config(%s, %s, false), "
            "set_config(%s, %s, false)",
            [f"pg_temp.idfields_{layout}", self.last, f"idfields.{layout}_lease", self.claim,
             f"idfields.{layout}_limit", self.limit],
        )  # fmt: skip
        node, holder, acquired, expires = self.row
        conn.execute(
            "UPDATE idfields_node_lease SET holder = %s, acquired_at_ms = %s, expires_at_ms = %s "
            "WHERE layout = %s AND node = %s",
            [holder, acquired, expires, layout, node],
        )
        conn.execute("SELECT setval(%s::regclass, %s)", [str(self.fence[0]), self.fence[1]])
        conn.execute("SELECT setval(to_regclass(%s), %s)",
                     [f'pg_temp."idfields:{layout}"', self.window])  # fmt: skip
        conn.commit()


# One step: ticks the clock moves on, IDs in one statement, a new transaction first or not,
# DISCARD SEQUENCES before it or not (currval() forgotten), the C function or PL/pgSQL.
STEPS = st.lists(
    st.tuples(st.integers(0, 2), st.integers(1, 3000), st.booleans(), st.booleans(), st.booleans()),
    min_size=1,
    max_size=12,
)


@NATIVE
@pytest.mark.parametrize("layout", ["snowflake", "traceid"])
@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=STEPS)
def test_the_c_path_issues_the_plpgsql_ids_from_the_same_state(
    connect: Connect, layout: str, steps: list[tuple[int, int, bool, bool, bool]]
) -> None:
    """One session, one claim, the same ticks through the test hooks: the calls interleaving
    the C function and PL/pgSQL give exactly the IDs of PL/pgSQL alone, strictly increasing."""
    conn = connect(autocommit=False)
    start = int(conn.execute(TICK[layout]).fetchone()[0])
    hook_ids(conn, "idfields", layout, start, 1)  # claims
    conn.commit()
    state = State(conn, layout)
    runs: list[list[int]] = []
    for mixed in (False, True):
        state.restore(conn)
        tick, ids = start, []
        for advance, n, new_transaction, discard, native in steps:
            tick += advance
            if new_transaction:
                conn.commit()
                if discard:
                    conn.execute("DISCARD SEQUENCES")
            schema = "idfields_native" if mixed and native else "idfields"
            ids += hook_ids(conn, schema, layout, tick, n)
        conn.commit()
        runs.append(ids)
    assert runs[1] == runs[0]
    assert all(a < b for a, b in zip(runs[1], runs[1][1:], strict=False))
    conn.close()


@NATIVE
def test_next_snowflake_inlines_one_c_call(connect: Connect) -> None:
    """The column default's function is an inlined call of the C function: no PL/pgSQL, no
    other SQL body, at plan time."""
    for layout in ("snowflake", "traceid"):
        plan = connect().execute(f"EXPLAIN VERBOSE SELECT idfields.next_{layout}()".encode())
        assert f"Output: idfields_native.next_{layout}()" in str(plan.fetchall())


@NATIVE
def test_single_row_transactions_call_no_plpgsql(counted: psycopg.Connection[Any]) -> None:
    """Each autocommit INSERT's first ID, and each new tick, go on with the session's claim in
    C: PL/pgSQL runs for the claim and a lease renewal (about four times a second) only."""
    single_row_inserts(counted, 1)  # claims
    before = function_calls(counted, "issue_snowflake")
    single_row_inserts(counted, 100)
    assert function_calls(counted, "issue_snowflake") - before <= 10


@NATIVE
@pytest.mark.parametrize("layout", ["snowflake", "traceid"])
def test_a_read_only_first_id_goes_on_inside_the_window_and_is_refused_past_it(
    connect: Connect, layout: str
) -> None:
    """The session holds a window; its next transaction is read-only: the C path leaves the
    first ID to PL/pgSQL, which goes on inside the window (no write needed), and refuses where
    the window ends (the lease row would be renewed), as on the PL/pgSQL path."""
    conn = connect(autocommit=False)
    call = f"SELECT idfields.next_{layout}()".encode()
    first = conn.execute(call).fetchone()[0]
    conn.commit()
    conn.execute("SET TRANSACTION READ ONLY")
    assert conn.execute(call).fetchone()[0] > first
    end_window(conn, layout)
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction, match="idfields: cannot issue"):
        conn.execute(call)


@NATIVE
def test_a_rolled_back_first_id_is_not_repeated(connect: Connect) -> None:
    """A session's first IDs in a transaction that rolls back (claim, sequence and switch go
    with it): the next ones are new, on the C path as on PL/pgSQL."""
    conn = connect(autocommit=False)
    first = [r[0] for r in conn.execute(
        "SELECT idfields.next_snowflake() FROM generate_series(1, 10)").fetchall()]  # fmt: skip
    conn.rollback()
    again = [r[0] for r in conn.execute(
        "SELECT idfields.next_snowflake() FROM generate_series(1, 10)").fetchall()]  # fmt: skip
    conn.commit()
    assert not set(first) & set(again)


@NATIVE
def test_a_reset_inside_a_transaction_takes_the_node_back(connect: Connect) -> None:
    """DISCARD TEMP inside a transaction drops the sequence the switch names: the C path never
    acts on it and hands the call to PL/pgSQL, which takes its own node back behind its limit."""
    conn = connect(autocommit=False)
    ids = [r[0] for r in conn.execute(
        "SELECT idfields.next_snowflake() FROM generate_series(1, 10)").fetchall()]  # fmt: skip
    conn.execute("DISCARD TEMP")
    ids += [r[0] for r in conn.execute(
        "SELECT idfields.next_snowflake() FROM generate_series(1, 10)").fetchall()]  # fmt: skip
    conn.commit()
    assert len(set(ids)) == 20 and len({NODE["snowflake"](i) for i in ids}) == 1


@NATIVE
@pytest.mark.parametrize("layout", ["snowflake", "traceid"])
def test_a_switch_naming_another_sequence_is_never_acted_on(
    connect: Connect, app_role: str, layout: str
) -> None:
    """The role's own sequence, which it may write, named in the switch (and its claim) after a
    real claim: the C path moves only the session's own sequence (the SQL hot path, as the
    caller, would setval() the named one)."""
    conn = connect(user=app_role, autocommit=False)
    first = int(conn.execute(f"SELECT idfields.next_{layout}()".encode()).fetchone()[0])
    conn.commit()
    conn.execute("CREATE TEMPORARY SEQUENCE forged MINVALUE -1 START -1")
    conn.execute("SELECT setval('forged', %s)", [first])
    oid = str(conn.execute("SELECT 'forged'::regclass::oid").fetchone()[0])
    claim = conn.execute(f"SELECT current_setting('idfields.{layout}_lease')".encode()).fetchone()
    forged_claim = ":".join([*claim[0].split(":")[:3], oid, *claim[0].split(":")[4:]])
    conn.execute(f"SELECT set_config('idfields.{layout}', %s, true)".encode(), [oid])
    conn.execute(
        f"SELECT set_config('idfields.{layout}_lease', %s, false)".encode(), [forged_claim]
    )
    again = int(conn.execute(f"SELECT idfields.next_{layout}()".encode()).fetchone()[0])
    assert conn.execute("SELECT pg_sequence_last_value('forged')").fetchone() == (first,)
    assert again > first


@NATIVE
def test_eight_backends_issue_distinct_ids_one_node_each(connect: Connect) -> None:
    """8 backends, each 200 single-row transactions and 20,000 IDs in statements: no ID twice,
    each backend's IDs increasing and on one node."""
    issued: list[list[int]] = [[] for _ in range(8)]

    def work(index: int) -> None:
        conn = connect()
        for _ in range(200):
            issued[index].append(
                int(conn.execute("SELECT idfields.next_snowflake()").fetchone()[0])
            )
        for _ in range(4):
            rows = conn.execute("SELECT idfields.next_snowflake() FROM generate_series(1, 5000)")
            issued[index] += [int(row[0]) for row in rows.fetchall()]

    run_in_threads(work, 8)
    every = [i for ids in issued for i in ids]
    assert len(set(every)) == len(every) == 8 * 20_200
    for ids in issued:
        assert ids == sorted(ids) and len({NODE["snowflake"](i) for i in ids}) == 1
    assert len({NODE["snowflake"](ids[0]) for ids in issued}) == 8


@NATIVE
def test_no_function_of_the_extension_takes_anything_forgeable(
    connect: Connect, app_role: str
) -> None:
    """The functions PUBLIC may run take no argument but wire()'s flag (which only picks what
    the caller's own CREATE OR REPLACE writes); the tick-taking hooks are the owner's, like
    idfields.next_<layout>_at()."""
    rows = (
        connect()
        .execute(
            "SELECT p.oid::regprocedure::text, p.pronargs, has_function_privilege(%s, p.oid, "
            "'EXECUTE') FROM pg_proc AS p WHERE p.pronamespace = 'idfields_native'::regnamespace",
            [app_role],
        )
        .fetchall()
    )
    runnable = {name for name, count, may in rows if may}
    assert {name for name, count, may in rows if may and count} == {"idfields_native.wire(boolean)"}
    assert "idfields_native.next_snowflake()" in runnable
    assert {"idfields_native.next_snowflake_at(bigint)", "idfields_native.next_traceid_at(bigint)"
            } == {name for name, _, may in rows if not may}  # fmt: skip


@pytest.mark.usefixtures("native_kwargs")  # skipped, or failed, without the extension
def test_the_extension_after_the_functions_wires_in_and_out(empty_database: DbUrl) -> None:
    """Functions first, then CREATE EXTENSION and wire(): a column default follows (same OID);
    DROP EXTENSION is refused while wired; wire(false) lets it go with IDs going on; installing
    the functions again over the extension wires it in by itself."""
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as conn:
        conn.execute(sql.load(sql.VERSION).encode())
        conn.execute("CREATE TABLE rows (id bigint PRIMARY KEY DEFAULT idfields.next_snowflake())")
        conn.execute("INSERT INTO rows DEFAULT VALUES")
        conn.execute("CREATE EXTENSION idfields_native")
        conn.execute("SELECT idfields_native.wire()")
        assert "idfields_native.next_snowflake()" in plan_of(
            conn, "INSERT INTO rows DEFAULT VALUES"
        )
        with pytest.raises(psycopg.errors.DependentObjectsStillExist):
            conn.execute("DROP EXTENSION idfields_native")
        conn.execute("SELECT idfields_native.wire(false)")
        conn.execute("DROP EXTENSION idfields_native")
        conn.execute("INSERT INTO rows DEFAULT VALUES")
        conn.execute("CREATE EXTENSION idfields_native")
        conn.execute(sql.load(sql.VERSION).encode())
        assert "idfields_native.next_snowflake()" in plan_of(
            conn, "INSERT INTO rows DEFAULT VALUES"
        )
        conn.execute("INSERT INTO rows DEFAULT VALUES")
        ids = [row[0] for row in conn.execute("SELECT id FROM rows ORDER BY id").fetchall()]
        assert len(ids) == 3
        conn.execute("DROP TABLE rows")


@pytest.mark.usefixtures("native_kwargs")
def test_an_owner_that_is_no_superuser_installs_over_the_extension(empty_database: DbUrl) -> None:
    """A superuser created the extension; the functions are installed by a plain role, which
    the install's end wires in (a schema PUBLIC could not use: 'permission denied for schema
    idfields_native' at install)."""
    database = empty_database.database
    owner = f"native_owner_{secrets.token_hex(3)}"
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as admin:
        admin.execute("CREATE EXTENSION idfields_native")
        try:
            install_as_plain_owner(admin, database, owner, reads_stats=False)
            assert "idfields_native.next_snowflake()" in plan_of(
                admin, "SELECT idfields.next_snowflake()"
            )
            ids = [int(admin.execute("SELECT idfields.next_snowflake()").fetchone()[0])
                   for _ in range(3)]  # fmt: skip
            assert ids == sorted(set(ids))
        finally:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            admin.execute("DISCARD ALL")
            admin.execute(pgsql.SQL("GRANT TEMPORARY ON DATABASE {} TO PUBLIC").format(
                pgsql.Identifier(database)))  # fmt: skip
            admin.execute("DROP SCHEMA IF EXISTS idfields CASCADE")
            drop_role(admin, owner)


@NATIVE
def test_pg_dump_of_a_wired_database_restores_wired(
    connect: Connect, db_kwargs: dict[str, object]
) -> None:
    """pg_dump orders the extension before the functions bound to it: the restore issues
    through the C functions."""
    admin = connect()
    name = f"native_restore_{secrets.token_hex(4)}"
    admin.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
    args = [
        "-h",
        str(db_kwargs["host"]),
        "-p",
        str(db_kwargs["port"]),
        "-U",
        str(db_kwargs["user"]),
    ]
    try:
        dump = subprocess.run(
            ["pg_dump", "-Fc", *args, str(db_kwargs["dbname"])], check=True, capture_output=True
        ).stdout
        subprocess.run(
            ["pg_restore", *args, "-d", name], input=dump, check=True, capture_output=True
        )
        restored = connect(dbname=name)
        as_a_database_of_its_own(restored)
        assert "idfields_native.next_snowflake()" in plan_of(
            restored, "SELECT idfields.next_snowflake()"
        )
        rows = restored.execute("SELECT idfields.next_snowflake() FROM generate_series(1, 1000)")
        ids = [int(row[0]) for row in rows.fetchall()]
        assert ids == sorted(set(ids))
        restored.close()
    finally:
        admin.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            pgsql.Identifier(name)))  # fmt: skip


@pytest.mark.usefixtures("native_kwargs")
@pytest.mark.parametrize("call", ["idfields_native.wire()", "idfields_native.next_snowflake()"])
def test_the_extension_without_the_functions_names_the_fix(
    empty_database: DbUrl, call: str
) -> None:
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION idfields_native")
        with pytest.raises(psycopg.errors.UndefinedFunction, match="issue_snowflake") as caught:
            conn.execute(f"SELECT {call}".encode())
        assert "Install the idfields database functions" in caught.value.diag.message_hint


@BOTH_PATHS
def test_a_column_default_needs_no_usage_on_schema_idfields(
    connect: Connect, db_kwargs: dict[str, object]
) -> None:
    """A role granted INSERT on a table only (no USAGE on schema idfields) inserts through its
    default, claims included, on both paths: the default is bound by OID (C that looked the
    PL/pgSQL issuer up by name: 'permission denied for schema idfields' at the claim)."""
    admin = connect()
    role = f"native_insert_{secrets.token_hex(3)}"
    table = pgsql.Identifier(f"native_rows_{secrets.token_hex(3)}")
    admin.execute(pgsql.SQL("CREATE ROLE {} LOGIN").format(pgsql.Identifier(role)))
    admin.execute(
        pgsql.SQL("CREATE TABLE {} (id bigint PRIMARY KEY DEFAULT idfields.next_snowflake(), "
                  "v integer)").format(table)
    )  # fmt: skip
    try:
        admin.execute(pgsql.SQL("GRANT INSERT ON {} TO {}").format(table, pgsql.Identifier(role)))
        conn = connect(user=role)
        for _ in range(3):
            conn.execute(pgsql.SQL("INSERT INTO {} (v) VALUES (1)").format(table))
        conn.close()
        assert admin.execute(pgsql.SQL("SELECT count(*) FROM {}").format(table)).fetchone() == (3,)
    finally:
        admin.execute(pgsql.SQL("DROP TABLE {}").format(table))
        drop_role(admin, role)


@BOTH_PATHS
@pytest.mark.parametrize("layout", ["snowflake", "traceid"])
def test_savepoints_rolled_back_around_ids_never_repeat_them(connect: Connect, layout: str) -> None:
    """IDs inside savepoints that roll back (the switch set there goes back with them), between
    IDs kept: every ID distinct and increasing, one node."""
    conn = connect(autocommit=False)
    call = pgsql.SQL("SELECT idfields.{}() FROM generate_series(1, 3)").format(
        pgsql.Identifier(f"next_{layout}")
    )
    ids: list[int] = []
    for round_ in range(20):
        if round_ % 5 == 0:
            conn.commit()  # a transaction's first ID inside the savepoint, then after it
        conn.execute("SAVEPOINT s")
        ids += [int(row[0]) for row in conn.execute(call).fetchall()]
        conn.execute("ROLLBACK TO SAVEPOINT s")
        ids += [int(row[0]) for row in conn.execute(call).fetchall()]
    conn.commit()
    assert ids == sorted(set(ids)) and len({NODE[layout](i) for i in ids}) == 1


@NATIVE
def test_a_role_with_only_usage_on_idfields_runs_the_c_path(
    connect: Connect, db_kwargs: dict[str, object]
) -> None:
    """A role granted only what the privileges page says calls the wired function: it needs
    no grant on the extension."""
    admin = connect()
    role = f"native_app_{secrets.token_hex(3)}"
    admin.execute(pgsql.SQL("CREATE ROLE {} LOGIN").format(pgsql.Identifier(role)))
    try:
        grant_as_documented(admin, role, str(db_kwargs["dbname"]))
        conn = connect(user=role)
        ids = [
            int(conn.execute("SELECT idfields.next_snowflake()").fetchone()[0]) for _ in range(5)
        ]
        assert ids == sorted(set(ids))
        conn.close()
    finally:
        drop_role(admin, role)


@pytest.mark.usefixtures("native_kwargs")
def test_a_standby_refuses_the_c_path_with_the_idfields_error(primary_and_standby: Pair) -> None:
    """The extension wired on the primary and replayed: on the standby the C functions find no
    sequence of the session and hand the call to PL/pgSQL, which refuses as without them."""
    kwargs = primary_and_standby.primary.psycopg_kwargs()
    with psycopg.connect(**kwargs, autocommit=True) as primary:
        primary.execute("CREATE EXTENSION idfields_native")
        try:
            primary.execute("SELECT idfields_native.wire()")
            wait_for_replay(
                primary_and_standby.standby,
                primary.execute("SELECT pg_current_wal_insert_lsn()").fetchone(),
            )
            with psycopg.connect(
                **primary_and_standby.standby.psycopg_kwargs(), autocommit=True
            ) as standby:
                for layout in ("snowflake", "traceid"):
                    call = f"idfields.next_{layout}()"
                    assert f"idfields_native.next_{layout}()" in plan_of(standby, f"SELECT {call}")
                    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction, match="hot standby"):
                        standby.execute(f"SELECT {call}".encode())
        finally:
            primary.execute("SELECT idfields_native.wire(false)")
            primary.execute("DROP EXTENSION idfields_native")
            primary.execute(sql.load(sql.VERSION).encode())
            wait_for_replay(
                primary_and_standby.standby,
                primary.execute("SELECT pg_current_wal_insert_lsn()").fetchone(),
            )


def plan_of(conn: psycopg.Connection[Any], statement: str) -> str:
    return str(conn.execute(f"EXPLAIN VERBOSE {statement}".encode()).fetchall())


@pytest.fixture
def planter(empty_database: DbUrl) -> Iterator[tuple[dict[str, Any], str]]:
    """A role that may create schemas in a new database (``CREATE ON DATABASE``, which database
    owners and migrating roles have) and nothing else; dropped afterwards."""
    kwargs = empty_database.psycopg_kwargs()
    role = f"native_planter_{secrets.token_hex(3)}"
    with psycopg.connect(**kwargs, autocommit=True) as admin:
        admin.execute(pgsql.SQL("CREATE ROLE {} LOGIN").format(pgsql.Identifier(role)))
        admin.execute(
            pgsql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
                pgsql.Identifier(empty_database.database), pgsql.Identifier(role)
            )
        )
    try:
        yield kwargs, role
    finally:
        with psycopg.connect(**kwargs, autocommit=True) as admin:
            admin.execute("DROP SCHEMA IF EXISTS idfields_native CASCADE")  # a throwaway database
            drop_role(admin, role)


def plant_wire(kwargs: dict[str, Any], role: str) -> None:
    """Schema idfields_native with the planter's own wire(boolean): run by a superuser, it
    makes the planter superuser and every ID 42."""
    with psycopg.connect(**{**kwargs, "user": role}, autocommit=True) as planter:
        planter.execute("CREATE SCHEMA IF NOT EXISTS idfields_native")
        planter.execute(
            pgsql.SQL(
                "CREATE FUNCTION idfields_native.wire(native boolean DEFAULT true) RETURNS void "
                "LANGUAGE plpgsql AS $body$ BEGIN EXECUTE 'ALTER ROLE {} SUPERUSER'; "
                "EXECUTE 'CREATE OR REPLACE FUNCTION idfields.next_snowflake() RETURNS bigint "
                "LANGUAGE sql BEGIN ATOMIC SELECT 42::bigint; END'; END $body$"
            ).format(pgsql.Identifier(role))
        )


def is_superuser(admin: psycopg.Connection[Any], role: str) -> bool:
    row = admin.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", [role]).fetchone()
    assert row is not None
    return bool(row[0])


def test_an_install_never_runs_a_wire_a_lesser_role_planted(
    planter: tuple[dict[str, Any], str],
) -> None:
    """No extension, a planted idfields_native.wire(boolean): the superuser's install of the
    functions leaves it alone (it had run it: the planter became superuser, every ID 42)."""
    kwargs, role = planter
    plant_wire(kwargs, role)
    with psycopg.connect(**kwargs, autocommit=True) as admin:
        admin.execute(sql.load(sql.VERSION).encode())
        assert not is_superuser(admin, role)
        ids = admin.execute("SELECT idfields.next_snowflake() FROM generate_series(1, 3)")
        assert len({value for (value,) in ids.fetchall()}) == 3


@pytest.mark.usefixtures("native_kwargs")
def test_an_extension_in_a_schema_a_lesser_role_owns_is_refused(
    planter: tuple[dict[str, Any], str],
) -> None:
    """CREATE EXTENSION into a schema the planter made first: that role could drop the C
    functions (and with them the wired defaults) or plant beside them, so the install refuses to
    wire it in, naming the schema's owner and the fix."""
    kwargs, role = planter
    with psycopg.connect(**{**kwargs, "user": role}, autocommit=True) as planted:
        planted.execute("CREATE SCHEMA idfields_native")
    with psycopg.connect(**kwargs, autocommit=True) as admin:
        admin.execute("CREATE EXTENSION idfields_native")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match=role) as refused:
            admin.execute(sql.load(sql.VERSION).encode())
        assert "DROP EXTENSION idfields_native" in str(refused.value.diag.message_hint)
        assert not is_superuser(admin, role)


@BOTH_PATHS
@pytest.mark.parametrize("layout", ["snowflake", "traceid"])
def test_discard_temp_between_a_cursors_fetches_goes_on_past_what_it_issued(
    connect: Connect, layout: str
) -> None:
    """DISCARD TEMP between two FETCHes of a cursor issuing IDs drops the window and position
    the running statement found: the next FETCH looks them up again, as the PL/pgSQL hot path
    is planned again, and the slow path goes on past everything issued: no ID twice, and a
    snowflake backend on its own node (a traceid one re-takes its row only past the window, so
    it may claim another). The C path kept the dropped OIDs: XX000, could not open relation
    with OID."""
    conn = connect(autocommit=False)
    conn.execute(
        pgsql.SQL("DECLARE c CURSOR FOR SELECT idfields.{}() FROM generate_series(1, 3000)").format(
            pgsql.Identifier(f"next_{layout}")
        )
    )
    ids = [r[0] for r in conn.execute("FETCH 500 FROM c").fetchall()]
    conn.execute("DISCARD TEMP")
    ids += [r[0] for r in conn.execute("FETCH 2500 FROM c").fetchall()]
    conn.commit()
    assert len(set(ids)) == 3000
    assert layout != "snowflake" or len({NODE[layout](i) for i in ids}) == 1
