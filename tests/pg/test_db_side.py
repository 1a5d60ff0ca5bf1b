"""The PL/pgSQL generators: uniqueness, order, node leases, clock, privileges, dump/restore."""

from __future__ import annotations

import itertools
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime

import psycopg
import pytest
import sqlalchemy as sa
from databases import DbUrl
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import sql

from idfields.coordination import LeaseSource
from idfields.generators import make_generator
from idfields.layouts import get_layout
from idfields.sqlalchemy_ext._coordination import SQLAlchemyDatabase
from tests.pg.conftest import (
    Connect,
    as_a_database_of_its_own,
    end_window,
    install_if_missing,
    run_in_threads,
)

SNOWFLAKE, TRACEID, DECIMAL = (get_layout(n) for n in ("snowflake", "traceid", "decimal"))
EPOCH_MS = 1_704_067_200_000


def call(function: str, *args: int) -> sql.Composable:
    """``idfields.<function>(<args>)`` as composed SQL."""
    arguments = sql.SQL(", ").join(sql.Literal(a) for a in args)
    return sql.SQL("idfields.{}({})").format(sql.Identifier(function), arguments)


def ids_of(conn: psycopg.Connection, expression: sql.Composable, n: int) -> list[int]:
    query = sql.SQL("SELECT {} FROM generate_series(1, %s::integer)").format(expression)
    return [row[0] for row in conn.execute(query, [n]).fetchall()]


def clock_tick(conn: psycopg.Connection) -> int:
    """The server clock as a snowflake tick (ms since the layout's epoch)."""
    return conn.execute("SELECT idfields.clock_ms() - %s", [EPOCH_MS]).fetchone()[0]


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=2**63 - 1))
def test_sql_decode_equals_python_decode(pg_kwargs: dict[str, object], value: int) -> None:
    with psycopg.connect(**pg_kwargs) as conn:
        snow = conn.execute("SELECT * FROM idfields.decode_snowflake(%s)", [value]).fetchone()
        reference = datetime(2026, 6, 1, tzinfo=UTC)
        trace = conn.execute(
            "SELECT * FROM idfields.decode_traceid(%s, %s)", [value, reference]
        ).fetchone()
        dec = conn.execute("SELECT * FROM idfields.decode_decimal(%s)", [value]).fetchone()
    py = SNOWFLAKE.decode(value)
    assert snow[:3] == (py.values["timestamp"], py.values["node"], py.values["sequence"])
    assert (snow[3], snow[5]) == (py.time_ns // 10**6, py.in_layout)
    if py.time is not None:
        assert snow[4] == py.time
    py = TRACEID.decode(value, reference_ns=int(reference.timestamp()) * 10**9)
    assert trace[:3] == (py.values["timestamp"], py.values["node_no"], py.values["counter"])
    assert (trace[3], trace[4], trace[5]) == (py.time_ns // 10**6, py.time, py.in_layout)
    py = DECIMAL.decode(value)
    assert dec == (
        py.values["counter"],
        py.values["generator_id"],
        py.values["launch_id"],
        py.in_layout,
    )


@pytest.mark.parametrize("function", ["next_snowflake", "next_traceid"])
def test_one_statement_past_a_ticks_capacity_never_repeats(connect, function: str) -> None:
    conn = connect()
    ids = ids_of(conn, call(function), 50_000)
    more = ids_of(conn, call(function), 20_000)
    assert len(set(ids + more)) == 70_000
    assert ids == sorted(ids) and ids[-1] < more[0]


def test_more_than_4096_ids_in_one_millisecond_carry_into_the_next(connect) -> None:
    conn = connect()
    claimed = SNOWFLAKE.decode(int(conn.execute("SELECT idfields.next_snowflake()").fetchone()[0]))
    now = clock_tick(conn)
    ids = ids_of(conn, call("next_snowflake_at", now + 5), 10_000)  # a frozen clock
    assert ids == sorted(set(ids))
    ticks = {SNOWFLAKE.decode(i).values["timestamp"] for i in ids}
    # the claim starts at its node's durable fence at the earliest (D7), which an earlier
    # backend on that node may have raised a little ahead of the clock
    start = max(now + 5, claimed.values["timestamp"])
    assert len(ticks) >= 3 and max(ticks) <= start + 3


def test_a_transaction_of_70000_rows_never_repeats(connect) -> None:
    conn = connect(autocommit=False)
    with conn.transaction():
        ids = ids_of(conn, call("next_snowflake"), 70_000)
    assert len(set(ids)) == 70_000


def test_clock_stepping_back_carries_forward_then_refuses(connect) -> None:
    conn = connect()
    now = clock_tick(conn)
    first = ids_of(conn, call("next_snowflake_at", now), 10)
    back = ids_of(conn, call("next_snowflake_at", now - 500), 5000)  # within the bound
    assert first + back == sorted(set(first + back))
    # inside the window the session holds the IDs go on from the last one; past it the clock
    # 5 s back is more than max_ahead behind it
    end_window(conn, "snowflake")
    with pytest.raises(psycopg.errors.DatetimeFieldOverflow) as caught:
        ids_of(conn, call("next_snowflake_at", now - 5000), 5000)
    assert "clock" in str(caught.value) and caught.value.diag.message_hint
    after = ids_of(conn, call("next_snowflake_at", now + 2000), 10)
    assert after[0] > back[-1]


def test_each_connection_holds_its_own_node(connect) -> None:
    conns = [connect() for _ in range(4)]
    nodes = [
        SNOWFLAKE.decode(ids_of(c, call("next_snowflake"), 1)[0]).values["node"] for c in conns
    ]
    assert len(set(nodes)) == 4
    holders = dict(
        conns[0]
        .execute("SELECT node, holder FROM public.idfields_node_lease WHERE layout = 'snowflake'")
        .fetchall()
    )
    for conn, node in zip(conns, nodes, strict=True):
        assert holders[node].startswith(f"pg:{conn.info.backend_pid}:")


def test_app_and_db_leases_do_not_overlap_and_rolled_back_claims_vanish(connect) -> None:
    conn = connect()
    admin = connect()
    far = 2**62
    # An app process holds every node but one: the backend must take that one.
    admin.execute("DELETE FROM public.idfields_node_lease WHERE layout = 'snowflake'")
    admin.execute(
        "INSERT INTO public.idfields_node_lease (layout, node, holder, acquired_at_ms, "
        "expires_at_ms) SELECT 'snowflake', n, 'app:test', 0, %s "
        "FROM generate_series(0, 1023) n WHERE n <> 7",
        [far],
    )
    with pytest.raises(psycopg.errors.DivisionByZero), conn.transaction():
        conn.execute("SELECT idfields.next_snowflake()")
        conn.execute("SELECT 1/0")
    # The claim rolled back with its transaction; the next call claims again, durably.
    value = ids_of(conn, call("next_snowflake"), 1)[0]
    assert SNOWFLAKE.decode(value).values["node"] == 7
    other = connect()
    with pytest.raises(psycopg.errors.ConfigurationLimitExceeded) as caught:
        other.execute("SELECT idfields.next_snowflake()")
    assert "no free snowflake node" in str(caught.value)
    assert "lease" in caught.value.diag.message_hint
    admin.execute("DELETE FROM public.idfields_node_lease WHERE layout = 'snowflake'")


def test_restricted_role_with_documented_grants(pg_kwargs, connect) -> None:
    admin = connect()
    admin.execute("DROP ROLE IF EXISTS idfields_app")
    admin.execute("CREATE ROLE idfields_app LOGIN")
    try:
        for grant in (
            "GRANT USAGE ON SCHEMA idfields TO idfields_app",
            "GRANT SELECT, INSERT, UPDATE ON public.idfields_node_lease TO idfields_app",
            "GRANT SELECT, INSERT, UPDATE ON public.idfields_counter TO idfields_app",
            "GRANT SELECT ON public.idfields_launch TO idfields_app",
        ):
            admin.execute(grant)
        admin.execute(
            "INSERT INTO public.idfields_launch VALUES (1, 'test', now()) ON CONFLICT DO NOTHING"
        )
        conn = connect(user="idfields_app")
        for function in ("next_snowflake", "next_traceid", "next_decimal"):
            ids = ids_of(conn, call(function), 1000)
            assert ids == sorted(set(ids))
        pid = conn.info.backend_pid
        conn.close()  # its temporary sequences go with the backend, once it has exited
        for _ in range(100):
            if not admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).rowcount:
                break
            time.sleep(0.05)
    finally:
        admin.execute("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM idfields_app")
        admin.execute("REVOKE ALL ON SCHEMA idfields FROM idfields_app")
        admin.execute("DROP ROLE idfields_app")


def test_pg_dump_restores_into_a_fresh_database(
    connect: Connect, fresh_database: Callable[[str], str]
) -> None:
    """A database that issued IDs, dumped and restored into another: the copy issues its own,
    increasing. Both databases are the test's own: the session database's dump would take the
    other workers' tables half-way through their DDL."""
    source, target = (DbUrl.parse(fresh_database("postgresql")) for _ in range(2))
    with psycopg.connect(**source.psycopg_kwargs(), autocommit=True) as conn:
        install_if_missing(conn)
        ids_of(conn, call("next_snowflake"), 10)
    args = ["-h", str(source.host), "-p", str(source.port), "-U", str(source.user)]
    dump = subprocess.run(
        ["pg_dump", "-Fc", *args, str(source.database)], check=True, capture_output=True
    ).stdout
    subprocess.run(
        ["pg_restore", *args, "-d", str(target.database)],
        input=dump,
        check=True,
        capture_output=True,
    )
    restored = connect(dbname=target.database)
    as_a_database_of_its_own(restored)
    ids = ids_of(restored, call("next_snowflake"), 1000)
    assert ids == sorted(set(ids))


def test_traceid_crosses_the_2_25_second_wrap_without_repeating(connect) -> None:
    conn = connect()
    now_s = conn.execute("SELECT idfields.clock_ms() / 1000").fetchone()[0]
    wrap = (now_s // 2**25 + 1) * 2**25  # the next wrap of the 25-bit seconds
    ids: list[int] = []
    try:
        for second in range(wrap - 2, wrap + 2):  # a test clock passing the wrap
            ids += ids_of(conn, call("next_traceid_at", second), 3000)
    finally:  # the lease now runs until the test clock's future: hand the node back
        conn.execute(
            "DELETE FROM public.idfields_node_lease WHERE layout = 'traceid' AND holder LIKE %s",
            [f"pg:{conn.info.backend_pid}:%"],
        )
    reference = (wrap + 10) * 10**9
    decoded = [TRACEID.decode(i, reference_ns=reference) for i in ids]
    assert [d.values["timestamp"] for d in decoded[::3000]] == [2**25 - 2, 2**25 - 1, 0, 1]
    assert len(set(ids)) == len(ids) and all(d.in_layout for d in decoded)
    # In (unwrapped time, counter) order, as Python's generator issues them; the raw integers
    # fall once, where the 25-bit seconds wrap.
    keys = [(d.time_ns, d.values["counter"]) for d in decoded]
    assert keys == sorted(keys)
    assert sum(b < a for a, b in itertools.pairwise(ids)) == 1


def test_committed_ids_stay_inside_the_lease_row_after_a_rolled_back_renewal(connect) -> None:
    conn = connect(autocommit=False)
    now = clock_tick(conn)
    ids_of(conn, call("next_snowflake_at", now), 10)
    conn.commit()
    rolled_back: list[int] = []
    with pytest.raises(psycopg.errors.DivisionByZero), conn.transaction():
        for step in (900, 1800, 2700):  # each renews the lease inside this transaction
            rolled_back += ids_of(conn, call("next_snowflake_at", now + step), 10)
        conn.execute("SELECT 1/0")
    conn.commit()
    # The renewals rolled back with their transaction, the window they wrote did not: the IDs
    # that go on inside it are covered by the node's durable fence, which every claim of the
    # node starts after (D7, D9), or by the lease row once renewed again.
    after = ids_of(conn, call("next_snowflake_at", now + 2700), 10)
    conn.commit()
    node = SNOWFLAKE.decode(after[0]).values["node"]
    covered = conn.execute(
        "SELECT greatest(l.expires_at_ms, idfields.node_fence_ms("
        "idfields.lease_lock_key('snowflake'), l.node)) FROM public.idfields_node_lease AS l "
        "WHERE l.layout = 'snowflake' AND l.node = %s",
        [node],
    ).fetchone()[0]
    assert after[0] > rolled_back[-1]
    assert max(SNOWFLAKE.decode(i).time_ns // 10**6 for i in after) <= covered


def test_python_and_sql_ids_share_one_table_and_one_lease_table(postgres_url, connect) -> None:
    admin = connect()
    admin.execute("DROP TABLE IF EXISTS mixed_rows")
    admin.execute(
        "CREATE TABLE mixed_rows (id bigint PRIMARY KEY DEFAULT idfields.next_snowflake(), "
        "side text NOT NULL)"
    )
    engine = sa.create_engine(DbUrl.parse(postgres_url).sqlalchemy_url())
    database = SQLAlchemyDatabase(engine)
    generator = make_generator("snowflake", LeaseSource(database, ttl_s=10))
    backends = [connect(), connect()]
    try:
        for _ in range(3):
            with admin.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO mixed_rows (id, side) VALUES (%s, 'python')",
                    [(i,) for i in generator.take(5000)],
                )
            for conn in backends:
                conn.execute(
                    "INSERT INTO mixed_rows (side) SELECT 'sql' FROM generate_series(1, 5000)"
                )
        rows = admin.execute("SELECT id, side FROM mixed_rows").fetchall()
        holders = dict(
            admin.execute(
                "SELECT node, holder FROM public.idfields_node_lease WHERE layout = 'snowflake'"
            ).fetchall()
        )
    finally:
        generator.close()
        database.dispose()
        engine.dispose()
        admin.execute("DROP TABLE mixed_rows")
    assert len(rows) == 45_000  # the primary key took every row: no collision
    nodes = {
        side: {SNOWFLAKE.decode(i).values["node"] for i, s in rows if s == side}
        for side in ("python", "sql")
    }
    assert len(nodes["python"]) == 1 and len(nodes["sql"]) == 2
    assert not nodes["python"] & nodes["sql"]
    assert not holders[next(iter(nodes["python"]))].startswith("pg:")
    assert all(holders[node].startswith("pg:") for node in nodes["sql"])


@pytest.mark.slow
def test_eight_connections_insert_1_600_000_distinct_increasing_ids(connect) -> None:
    admin = connect()
    admin.execute("DROP TABLE IF EXISTS db_side_rows")
    admin.execute(
        "CREATE TABLE db_side_rows (id bigint PRIMARY KEY "
        "DEFAULT idfields.next_snowflake(), conn integer, n integer)"
    )

    def insert(index: int) -> None:
        conn = connect()
        for start in range(0, 200_000, 20_000):
            conn.execute(
                "INSERT INTO db_side_rows (conn, n) SELECT %s, g "
                "FROM generate_series(%s::integer, %s::integer) g",
                [index, start, start + 19_999],
            )

    run_in_threads(insert, 8)
    assert admin.execute("SELECT count(*), count(DISTINCT id) FROM db_side_rows").fetchone() == (
        1_600_000,
        1_600_000,
    )
    backwards = admin.execute(
        "SELECT count(*) FROM (SELECT id < lag(id) OVER (PARTITION BY conn ORDER BY n) AS back "
        "FROM db_side_rows) s WHERE back"
    ).fetchone()[0]
    assert backwards == 0
    admin.execute("DROP TABLE db_side_rows")
