"""User layouts inside PostgreSQL: idfields.next_<name>() rendered from a Layout, over the same
slow path as the built-ins; past a narrow sequence's capacity, with constants, wrapping, seconds;
idfields.decode_<name>() agreeing with Layout.decode; the layouts it refuses; the Django and
Alembic operations that install it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import alembic_env
import psycopg
import pytest
from alembic import command
from databases import DbUrl
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import sql

from idfields import sql as idsql
from idfields.errors import LayoutError
from idfields.layouts import (
    DECIMAL,
    GLOBALID,
    RUNID,
    SNOWFLAKE,
    Layout,
    Node,
    Sequence,
    Timestamp,
)
from idfields.sql.layouts import render_layout_function
from tests.pg.conftest import TABLES, install_if_missing, run_in_threads
from tests.pg.sample_layouts import COARSE, EPOCH, FINE, LAYOUTS, NARROW, TAGGED, WRAPPING
from tests.pg.test_install_ops import MIGRATION as FUNCTIONS_MIGRATION
from tests.pg.test_install_ops import django_connection, run

__all__ = ["django_connection"]  # a fixture, imported for the Django tests below


@pytest.fixture(scope="module", autouse=True)
def installed(pg_kwargs: dict[str, object]) -> None:
    with psycopg.connect(**pg_kwargs, autocommit=True) as conn:
        install_if_missing(conn)
        for layout in LAYOUTS:
            conn.execute(render_layout_function(layout)[0].encode())


def next_id(layout: Layout) -> sql.Composable:
    return sql.SQL("idfields.{}()").format(sql.Identifier(f"next_{layout.name}"))


def next_at(layout: Layout, tick: int) -> sql.Composable:
    name = sql.Identifier(f"next_{layout.name}_at")
    return sql.SQL("idfields.{}({})").format(name, sql.Literal(tick))


def ids_of(conn: psycopg.Connection, expression: sql.Composable, n: int) -> list[int]:
    query = sql.SQL("SELECT {} FROM generate_series(1, %s::integer)").format(expression)
    return [row[0] for row in conn.execute(query, [n]).fetchall()]


def server_ns(conn: psycopg.Connection) -> int:
    return int(conn.execute("SELECT idfields.clock_us()").fetchone()[0]) * 1000


def leased_node(conn: psycopg.Connection, layout: Layout) -> int:
    row = conn.execute(
        "SELECT node FROM public.idfields_node_lease WHERE layout = %s AND holder LIKE %s",
        [layout.lease_key, f"pg:{conn.info.backend_pid}:%"],
    ).fetchone()
    assert row is not None
    return int(row[0])


def release(conn: psycopg.Connection, layout: Layout) -> None:
    """Hand back a node whose lease a test clock pushed into the future."""
    conn.execute(
        "DELETE FROM public.idfields_node_lease WHERE layout = %s AND holder LIKE %s",
        [layout.lease_key, f"pg:{conn.info.backend_pid}:%"],
    )


@pytest.fixture
def table(connect: Any) -> Iterator[str]:
    admin = connect()
    admin.execute("DROP TABLE IF EXISTS narrow_rows")
    admin.execute(
        "CREATE TABLE narrow_rows (id bigint PRIMARY KEY DEFAULT idfields.next_narrow(), "
        "conn integer NOT NULL, n integer NOT NULL)"
    )
    yield "narrow_rows"
    admin.execute("DROP TABLE narrow_rows")


def insert(conn: psycopg.Connection, index: int, rows: int) -> None:
    conn.execute(
        "INSERT INTO narrow_rows (conn, n) SELECT %s, g FROM generate_series(1, %s::integer) g",
        [index, rows],
    )


def test_one_insert_of_50000_rows_past_16_ids_a_millisecond(connect: Any, table: str) -> None:
    conn = connect()
    before = server_ns(conn)
    insert(conn, 0, 50_000)  # 3.1 s of the layout's capacity: it runs 1 s ahead, then waits
    after = server_ns(conn)
    ids = [r[0] for r in conn.execute("SELECT id FROM narrow_rows ORDER BY n").fetchall()]
    assert len(ids) == len(set(ids)) == 50_000
    assert ids == sorted(ids)
    decoded = [NARROW.decode(i) for i in ids]
    assert all(d.in_layout for d in decoded)
    assert {d.values["node"] for d in decoded} == {leased_node(conn, NARROW)}
    times = [d.time_ns for d in decoded if d.time_ns is not None]
    assert before - 10**6 <= min(times) and max(times) <= after + 10**9
    assert after - before >= (50_000 // 16 - 1_000) * 10**6  # it waited for the clock


def test_concurrent_connections_hold_their_own_nodes(connect: Any, table: str) -> None:
    nodes: dict[int, int] = {}

    def work(index: int) -> None:
        conn = connect()
        insert(conn, index, 20_000)
        nodes[index] = leased_node(conn, NARROW)

    run_in_threads(work, 3)
    rows = connect().execute("SELECT conn, n, id FROM narrow_rows ORDER BY conn, n").fetchall()
    assert len(rows) == len({row[2] for row in rows}) == 60_000
    assert len(set(nodes.values())) == 3
    for index, group in itertools.groupby(rows, key=lambda row: row[0]):
        ids = [row[2] for row in group]
        assert ids == sorted(ids)
        assert {NARROW.decode(i).values["node"] for i in ids} == {nodes[index]}


def test_the_hot_path_is_one_call_in_the_statement(connect: Any) -> None:
    """Nothing of the hot path is planned with the caller's statement: its expression is
    planned once a session, inside next_<layout>(), which runs as the owner (D9)."""
    plan = connect().execute("EXPLAIN VERBOSE SELECT idfields.next_narrow()").fetchall()
    text = "\n".join(row[0] for row in plan)
    assert "next_narrow()" in text and "setval(" not in text


def test_clock_stepping_back_carries_forward_then_refuses(connect: Any) -> None:
    conn = connect()
    now = NARROW.tick_of(server_ns(conn))
    first = ids_of(conn, next_at(NARROW, now), 10)
    back = ids_of(conn, next_at(NARROW, now - 500), 5000)  # 313 ticks: ahead, within 1 s
    assert first + back == sorted(set(first + back))
    assert max(NARROW.decode(i).values["timestamp"] for i in back) > now + 300
    with pytest.raises(psycopg.errors.DatetimeFieldOverflow) as caught:
        # inside the window the session holds (two ticks past the last ID) first, then past it
        ids_of(conn, next_at(NARROW, now - 5000), 1000)
    assert "clock is" in str(caught.value) and caught.value.diag.message_hint
    after = ids_of(conn, next_at(NARROW, now + 2000), 10)
    assert after == sorted(after) and after[0] > back[-1]
    release(conn, NARROW)


def test_seconds_and_microseconds_units_follow_the_clock(connect: Any) -> None:
    conn = connect()
    for layout in (COARSE, FINE):
        before = server_ns(conn)
        ids = ids_of(conn, next_id(layout), 20_000)
        after = server_ns(conn)
        assert ids == sorted(set(ids))
        decoded = [layout.decode(i) for i in ids]
        assert {d.values["node"] for d in decoded} == {leased_node(conn, layout)}
        unit = layout.unit_ns
        times = [d.time_ns for d in decoded if d.time_ns is not None]
        assert before - unit <= min(times) and max(times) <= after + 10**9


def test_constants_stay_in_place_across_sequence_carries(connect: Any) -> None:
    conn = connect()
    ids = ids_of(conn, next_id(TAGGED), 20_000)  # 32 IDs a tick: 625 carries
    assert ids == sorted(set(ids))
    decoded = [TAGGED.decode(i) for i in ids]
    assert all(d.in_layout for d in decoded)
    assert {(d.values["version"], d.values["region"], d.values["flag"]) for d in decoded} == {
        (2, 1, 1)
    }
    assert min(d.values["sequence"] for d in decoded) == 1
    assert 3 <= leased_node(conn, TAGGED) <= 200


def test_wrapping_layout_crosses_its_wrap_without_repeating(connect: Any) -> None:
    conn = connect()
    now = WRAPPING.tick_of(server_ns(conn))
    wrap = (now // 2**30 + 1) * 2**30
    ids: list[int] = []
    try:
        for tick in range(wrap - 2, wrap + 2):  # a test clock passing the wrap
            ids += ids_of(conn, next_at(WRAPPING, tick), 3000)  # 3 ticks' worth each
    finally:
        release(conn, WRAPPING)
    reference = WRAPPING.epoch_ns + (wrap + 100) * WRAPPING.unit_ns
    decoded = [WRAPPING.decode(i, reference_ns=reference) for i in ids]
    assert len(set(ids)) == len(ids) and all(d.in_layout for d in decoded)
    assert {d.values["version"] for d in decoded} == {1}
    keys = [(d.time_ns, d.values["sequence"]) for d in decoded]
    assert keys == sorted(keys)
    assert sum(b < a for a, b in itertools.pairwise(ids)) == 1  # the raw integers wrap once


@pytest.fixture(scope="module")
def decoding(pg_kwargs: dict[str, object]) -> Iterator[psycopg.Connection]:
    with psycopg.connect(**pg_kwargs, autocommit=True) as conn:
        yield conn


def sql_decode(
    conn: psycopg.Connection, layout: Layout, value: int, reference: datetime | None
) -> tuple[list[str], tuple[Any, ...]]:
    """decode_<name>(value[, reference]): its column names and its row."""
    name = sql.Identifier(f"decode_{layout.name}")
    more = sql.SQL("") if reference is None else sql.SQL(", %s")
    cursor = conn.execute(
        sql.SQL("SELECT * FROM idfields.{}(%s{})").format(name, more),
        [value, *([] if reference is None else [reference])],
    )
    row = cursor.fetchone()
    assert row is not None and cursor.description is not None
    return [column.name for column in cursor.description], row


def py_decode(layout: Layout, value: int, reference_ns: int) -> tuple[list[str], tuple[Any, ...]]:
    """Layout.decode as the SQL decoder's columns; time_ms/_us is NULL past a bigint."""
    decoded = layout.decode(value, reference_ns=reference_ns)
    assert layout.timestamp and layout.sequence and decoded.time_ns is not None
    names = [layout.timestamp.name, layout.node_fields[0].name, layout.sequence.name]
    column, unit_ns = ("time_us", 10**3) if layout is FINE else ("time_ms", 10**6)
    at = decoded.time_ns // unit_ns
    row = (
        *(decoded.values[n] for n in names),
        at if -(2**63) <= at < 2**63 else None,
        decoded.time,
        decoded.in_layout,
    )
    return [*names, column, "time", "in_layout"], row


def unix_ns(moment: datetime) -> int:
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    reference=st.datetimes(datetime(1900, 1, 1), datetime(2300, 1, 1), timezones=st.just(UTC)),
)
def test_sql_decode_equals_python_decode(
    decoding: psycopg.Connection, layout: Layout, data: st.DataObject, reference: datetime
) -> None:
    value = data.draw(st.integers(1, layout.max_id) | st.integers(1, 2**63 - 1), label="id")
    given_reference = reference if layout.wraps else None
    assert sql_decode(decoding, layout, value, given_reference) == py_decode(
        layout, value, unix_ns(reference)
    )


def test_wrapping_decode_takes_the_nearest_period(decoding: psycopg.Connection) -> None:
    """At both edges of half a period, and with the server clock as the reference."""
    reference = datetime(2026, 3, 1, 12, 0, 0, 500, tzinfo=UTC)
    now, half = WRAPPING.tick_of(unix_ns(reference)), 2**29
    for offset in (-half - 1, -half, -half + 1, 0, half - 1, half, half + 1):
        value = WRAPPING.compose(timestamp=now + offset, node=7, sequence=3)
        assert sql_decode(decoding, WRAPPING, value, reference) == py_decode(
            WRAPPING, value, unix_ns(reference)
        )
    clock_ns = server_ns(decoding)
    value = WRAPPING.compose(timestamp=WRAPPING.tick_of(clock_ns) + 5, node=7, sequence=3)
    names, row = sql_decode(decoding, WRAPPING, value, None)
    assert (names, row) == py_decode(WRAPPING, value, clock_ns)
    assert abs(row[3] * 10**6 - clock_ns) < 10**9  # this period, not another


def sequence_first() -> Layout:
    return Layout("seqfirst", [Timestamp(41, epoch=EPOCH), Sequence(12), Node(10)])


@pytest.mark.parametrize(
    ("layout", "problem"),
    [
        (DECIMAL, "it is decimal"),
        (GLOBALID, "Node comes before the Timestamp"),
        (RUNID, "0 Timestamp fields"),
        (Layout("nonode", [Timestamp(41, epoch=EPOCH), Sequence(12)]), "0 Node fields"),
        (Layout("noseq", [Timestamp(41, epoch=EPOCH), Node(10)]), "0 Sequence fields"),
        (sequence_first(), "Sequence is not the last"),
        (Layout("Bad-Name", [Timestamp(41, epoch=EPOCH), Node(10), Sequence(12)]), "safe SQL"),
        (SNOWFLAKE, "used by the built-in"),
        (
            Layout("clash", [Timestamp(41, epoch=EPOCH, name="time"), Node(10), Sequence(12)]),
            "field name 'time' is a parameter or column of idfields.decode_clash()",
        ),
        (Layout("x_lease", [Timestamp(41, epoch=EPOCH), Node(10), Sequence(12)]), "_lease"),
        (
            Layout("tenth_us", [Timestamp(55, unit="100ns", epoch=EPOCH), Node(4), Sequence(3)]),
            "finer than PostgreSQL's clock",
        ),
        (
            Layout("short", [Timestamp(20, unit="ms", wraps=True), Node(10), Sequence(12)]),
            "repeats in less than a day",
        ),
        (
            Layout("wide", [Timestamp(30, unit="s", epoch=EPOCH), Node(32), Sequence(1)]),
            "past the lease table's integer column",
        ),
        (
            Layout("capped", [Timestamp(41, epoch=EPOCH), Node(10), Sequence(4, maximum=9)]),
            "stops at 9",
        ),
    ],
)
def test_inexpressible_layouts_are_refused_with_the_fix(layout: Layout, problem: str) -> None:
    with pytest.raises(LayoutError, match="cannot be generated inside PostgreSQL") as caught:
        render_layout_function(layout)
    message = str(caught.value)
    assert problem in message and f"layout {layout.name!r}" in message
    assert ";" in message  # the problem, then the fix


# --- migration operations on a fresh database ------------------------------------------------


def functions_in(url: DbUrl) -> set[str]:
    with psycopg.connect(**url.psycopg_kwargs()) as conn:
        rows = conn.execute(
            "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = 'idfields'"
        ).fetchall()
    return {row[0] for row in rows}


def generates(url: DbUrl, layout: Layout) -> list[int]:
    with psycopg.connect(**url.psycopg_kwargs(), autocommit=True) as conn:
        conn.execute(TABLES)
        return ids_of(conn, next_id(layout), 100)


def test_django_operation_round_trips_through_a_migration_file(
    django_connection: Any, empty_database: DbUrl
) -> None:
    from django.db.migrations.writer import OperationWriter

    from idfields.migrations.django import InstallIdFunctions, InstallLayoutFunctions

    operation = InstallLayoutFunctions(layout=NARROW)
    source, imports = OperationWriter(operation, indentation=0).serialize()
    assert "'kind': 'sequence'" in source and "'width': 4" in source  # the layout's fields
    namespace: dict[str, Any] = {}
    exec("\n".join(sorted(imports)) + "\nrebuilt = " + source.rstrip(","), namespace)
    rebuilt = namespace["rebuilt"]
    assert rebuilt.layout == NARROW and rebuilt.deconstruct() == operation.deconstruct()

    run(django_connection, InstallIdFunctions(idsql.VERSION), "forwards")
    run(django_connection, rebuilt, "forwards")
    assert {"next_narrow", "next_narrow_at", "decode_narrow"} <= functions_in(empty_database)
    ids = generates(empty_database, NARROW)
    assert ids == sorted(set(ids))
    run(django_connection, rebuilt, "backwards")
    left = functions_in(empty_database)
    assert not {"next_narrow", "next_narrow_at", "decode_narrow"} & left
    assert "next_snowflake" in left  # only the layout's functions went
    decimal = InstallLayoutFunctions(layout=DECIMAL.to_spec())  # loads; refused as it runs
    with pytest.raises(LayoutError, match="it is decimal"):
        run(django_connection, decimal, "forwards")


MIGRATION = '''
"""a user layout's ID functions"""
from idfields.migrations.alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

LAYOUT = {spec!r}


def upgrade() -> None:
    op.install_layout_functions(LAYOUT)


def downgrade() -> None:
    op.drop_layout_functions(LAYOUT)
'''


def test_alembic_operations_upgrade_and_downgrade(empty_database: DbUrl, tmp_path: Path) -> None:
    url = empty_database.sqlalchemy_url()
    config, output = alembic_env.alembic_config(tmp_path, url, FUNCTIONS_MIGRATION)
    versions = tmp_path / "migrations" / "versions"
    (versions / "0002_layout.py").write_text(MIGRATION.format(spec=NARROW.to_spec()))
    command.upgrade(config, "head", sql=True)
    assert 'CREATE OR REPLACE FUNCTION idfields."next_narrow"()' in output.getvalue()
    command.upgrade(config, "head")
    ids = generates(empty_database, NARROW)
    assert ids == sorted(set(ids))
    command.downgrade(config, "0001")
    left = functions_in(empty_database)
    assert "next_narrow" not in left and "next_snowflake" in left
    command.downgrade(config, "base")
    assert not functions_in(empty_database)


def test_alembic_layout_operations_reverse_each_other() -> None:
    from idfields.migrations.alembic._functions import (
        DropLayoutFunctionsOp,
        InstallLayoutFunctionsOp,
    )

    install = InstallLayoutFunctionsOp(NARROW.to_spec())
    assert isinstance(install.reverse(), DropLayoutFunctionsOp)
    assert install.reverse().layout == NARROW
    assert isinstance(install.reverse().reverse(), InstallLayoutFunctionsOp)
