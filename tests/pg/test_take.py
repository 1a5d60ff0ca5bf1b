"""Bulk IDs inside PostgreSQL: idfields.take_<layout>(n), the same IDs as n calls of
next_<layout>(), validated once per tick."""

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


def test_take_of_nothing_and_of_less_than_nothing(connect: Any) -> None:
    conn = connect()
    assert taken(conn, "take_snowflake", 0) == []
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="n >= 0"):
        taken(conn, "take_snowflake", -1)


def test_load_names_the_lease_schema_from_0002_on() -> None:
    assert '"my ""odd"" schema".idfields_node_lease' in sql.load("0002", 'my "odd" schema')
    assert "@lease_schema@" not in sql.load("0002")
    with pytest.raises(ValueError, match="leases from schema public only"):
        sql.load("0001", lease_schema="app")
    assert sql.needs_lease_schema("0002") and not sql.needs_lease_schema("0001")
