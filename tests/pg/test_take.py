"""Bulk IDs inside PostgreSQL: idfields.take_<layout>(n), the same IDs as n calls of
next_<layout>(), validated once per tick; and the same IDs as ranges, take_<layout>_ranges(n),
one row per tick for the INSERT to expand."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from idfields import sql
from idfields.layouts import SNOWFLAKE, TRACEID


def taken(conn: psycopg.Connection, function: str, n: int) -> list[int]:
    query = f"SELECT id FROM idfields.{function}(%s) AS id"  # noqa: S608 (a fixed name)
    return [row[0] for row in conn.execute(query.encode(), [n]).fetchall()]


@pytest.mark.parametrize(("function", "layout"), [("snowflake", SNOWFLAKE), ("traceid", TRACEID)])
def test_take_continues_the_backends_sequence_without_repeats(
    connect: Any, function: str, layout: Any
) -> None:
    conn = connect()
    before = conn.execute(f"SELECT idfields.next_{function}()".encode()).fetchone()[0]
    bulk = taken(conn, f"take_{function}", 20_000)
    after = conn.execute(f"SELECT idfields.next_{function}()".encode()).fetchone()[0]
    ids = [before, *bulk, after]
    assert len(bulk) == 20_000 and len(set(ids)) == len(ids)
    if function == "snowflake":
        assert ids == sorted(ids)
    assert all(layout.decode(i).in_layout for i in ids)


def test_take_feeds_an_insert_select(connect: Any) -> None:
    conn = connect()
    conn.execute("CREATE TEMPORARY TABLE bulk (id bigint PRIMARY KEY, v integer)")
    conn.execute("INSERT INTO bulk (id, v) SELECT id, 1 FROM idfields.take_snowflake(100000) AS id")
    assert conn.execute("SELECT count(*) FROM bulk").fetchone() == (100_000,)


def expanded(conn: psycopg.Connection, layout: str, n: int) -> list[int]:
    query = (
        f"SELECT id FROM idfields.take_{layout}_ranges(%s) AS r, "  # noqa: S608 (a fixed name)
        "pg_catalog.generate_series(r.first_id, r.last_id) AS id"
    )
    return [row[0] for row in conn.execute(query.encode(), [n]).fetchall()]


@pytest.mark.parametrize(("function", "layout"), [("snowflake", SNOWFLAKE), ("traceid", TRACEID)])
def test_ranges_continue_the_backends_sequence_as_take_does(
    connect: Any, function: str, layout: Any
) -> None:
    """Ranges, then take(n), then next(): one sequence of distinct IDs in the layout, each range
    inside one tick (its IDs differ in the sequence bits only)."""
    conn = connect()
    before = conn.execute(f"SELECT idfields.next_{function}()".encode()).fetchone()[0]
    query = f"SELECT first_id, last_id FROM idfields.take_{function}_ranges(20000)"  # noqa: S608
    ranges = conn.execute(query.encode()).fetchall()
    bulk = [i for first, last in ranges for i in range(first, last + 1)]
    more = taken(conn, f"take_{function}", 5000)
    after = conn.execute(f"SELECT idfields.next_{function}()".encode()).fetchone()[0]
    ids = [before, *bulk, *more, after]
    assert len(bulk) == 20_000 and len(set(ids)) == len(ids)
    if function == "snowflake":
        assert ids == sorted(ids)
    assert all(layout.decode(i).in_layout for i in ids)
    sequence_bits = layout.placed[-1].radix - 1
    assert all(first & ~sequence_bits == last & ~sequence_bits for first, last in ranges)


def test_ranges_from_two_sessions_never_overlap(connect: Any) -> None:
    first, second = connect(), connect()
    ids = expanded(first, "snowflake", 30_000) + expanded(second, "snowflake", 30_000)
    ids += expanded(first, "snowflake", 30_000)
    assert len(set(ids)) == len(ids) == 90_000


def test_ranges_feed_an_insert_select(connect: Any) -> None:
    conn = connect()
    conn.execute("CREATE TEMPORARY TABLE bulk (id bigint PRIMARY KEY, v integer)")
    conn.execute(
        "INSERT INTO bulk (id, v) SELECT id, 1 FROM idfields.take_snowflake_ranges(100000) AS r, "
        "pg_catalog.generate_series(r.first_id, r.last_id) AS id"
    )
    assert conn.execute("SELECT count(*), count(DISTINCT id) FROM bulk").fetchone() == (
        100_000,
        100_000,
    )
    assert expanded(conn, "snowflake", 0) == []
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="n >= 0"):
        expanded(conn, "snowflake", -1)


def test_take_of_nothing_and_of_less_than_nothing(connect: Any) -> None:
    conn = connect()
    assert taken(conn, "take_snowflake", 0) == []
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="n >= 0"):
        taken(conn, "take_snowflake", -1)


def test_load_names_the_lease_schema() -> None:
    assert '"my ""odd"" schema".idfields_node_lease' in sql.load(sql.VERSION, 'my "odd" schema')
    assert "@lease_schema@" not in sql.load(sql.VERSION)
    with pytest.raises(ValueError, match="lease_schema must be a schema name"):
        sql.load(sql.VERSION, lease_schema="")
