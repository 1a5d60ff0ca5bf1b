"""What a single-row transaction's first ID, and a growing layout's ID in a new tick, cost:
no PL/pgSQL call inside the window the session holds (D9); past it, one lean PL/pgSQL call, the
layout's issuer ``idfields.issue_<layout>()``, with the geometry as literals, before the generic
``idfields.time_next()``. With a check per transaction, the first tests would count one call
per transaction (100 of 100).
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest

from idfields.layouts import SNOWFLAKE
from tests.pg.conftest import (
    Connect,
    function_calls,
    install_layouts,
    one_id,
    single_row_inserts,
)
from tests.pg.sample_layouts import NARROW, TAGGED

# growing layouts: the snowflake, one with a 4-bit sequence, one with constants in every gap
GROWING = ["next_snowflake", "next_narrow", "next_tagged"]


@pytest.fixture(scope="module", autouse=True)
def user_layouts(pg_kwargs: dict[str, object]) -> None:
    install_layouts(pg_kwargs, NARROW, TAGGED)


@pytest.mark.parametrize("function", [*GROWING, "next_traceid"])
def test_a_statement_plans_the_hot_path_as_one_call(connect: Connect, function: str) -> None:
    """A statement that uses the default plans one call (the simple protocol plans every
    statement): next_<layout>() is PL/pgSQL, whose one expression inlines next_<layout>_on()
    with the session's window and position as constants when PL/pgSQL plans it, once a
    session; next_<layout>_on() calls no other SQL function (the clock is written in), which
    would be one more stored body read, decompressed and parsed at that planning."""
    query = (
        "SELECT d.refobjid::regprocedure::text FROM pg_depend AS d "
        "JOIN pg_proc AS p ON p.oid = d.refobjid JOIN pg_language AS l ON l.oid = p.prolang "
        "WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_proc'::regclass "
        "AND d.objid = to_regprocedure(%s) AND l.lanname = 'sql'"
    )
    conn = connect()
    language = "SELECT l.lanname FROM pg_proc AS p JOIN pg_language AS l ON l.oid = p.prolang "
    language += "WHERE p.oid = to_regprocedure(%s)"
    assert conn.execute(language, [f"idfields.{function}()"]).fetchone() == ("plpgsql",)
    on = f"idfields.{function}_on(regclass,regclass)"
    assert conn.execute(query, [on]).fetchall() == []


@pytest.mark.parametrize("function", [*GROWING, "next_traceid"])
def test_single_row_transactions_skip_the_generic_path(
    counted: psycopg.Connection[Any], function: str
) -> None:
    """A wrapping layout's new tick (traceid's: one a second) takes the slow path."""
    ids = [one_id(counted, function)]  # claims
    before = function_calls(counted, "time_next")
    ids += [one_id(counted, function) for _ in range(100)]
    # a lease renewal (about twice a second) and a carried sequence still take it
    assert function_calls(counted, "time_next") - before <= 10
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


@pytest.mark.parametrize("function", [*GROWING, "next_traceid"])
def test_a_transactions_first_id_makes_no_plpgsql_call(
    counted: psycopg.Connection[Any], function: str
) -> None:
    """Inside the window the session holds, the inlined hot path issues a transaction's first
    ID itself (with a check per transaction: 20 issuer calls of 20)."""
    one_id(counted, function)  # claims
    issuer = function.replace("next_", "issue_", 1)
    issued = function_calls(counted, issuer)
    for _ in range(20):
        one_id(counted, function)
    # renewals and traceid's new second (the bindings run when a statement is planned)
    assert function_calls(counted, issuer) - issued <= 6


def test_single_row_inserts_skip_the_generic_path(counted: psycopg.Connection[Any]) -> None:
    single_row_inserts(counted, 1)  # claims
    before = function_calls(counted, "time_next")
    single_row_inserts(counted, 100)
    assert function_calls(counted, "time_next") - before <= 10


def test_a_role_without_the_hooks_grant_cannot_move_the_tick(
    connect: Connect, app_role: str
) -> None:
    """Every function that takes a tick from its caller is the test hook's or internal, revoked
    from PUBLIC: the app role is refused them all, and its IDs stay on the clock. (The slow path
    runs as the owner, so a privilege check there would see the owner's, not the caller's.)"""
    conn = connect(user=app_role)
    first = one_id(conn, "next_snowflake")
    tick = SNOWFLAKE.decode(first).values["timestamp"]
    for call in (
        "SELECT idfields.next_snowflake_at(%s)",
        "SELECT idfields.issue_snowflake_at(%s, NULL)",
        "SELECT idfields.next_traceid_at(%s)",
        "SELECT idfields.issue_traceid_at(%s, NULL)",
        "SELECT idfields.next_narrow_at(%s)",
        "SELECT idfields.issue_narrow_at(%s, NULL)",
    ):
        for foreign in (tick + 10**7, tick + 5_000, 0):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(call, [foreign])
    after = one_id(conn, "next_snowflake")
    assert after > first
    assert SNOWFLAKE.decode(after).values["timestamp"] - tick < 5_000


def test_a_tick_inside_the_lease_is_the_next_id(connect: Connect) -> None:
    """What the issuer's test hook issues for a tick the lease covers: the first ID of that
    tick on the claim's node (or the next ID, when the position is already there)."""
    conn = connect()
    first = one_id(conn, "next_snowflake")
    values = SNOWFLAKE.decode(first).values
    ahead = conn.execute(
        "SELECT idfields.issue_snowflake_at(%s, NULL)", [values["timestamp"] + 100]
    ).fetchone()[0]
    assert SNOWFLAKE.decode(ahead).values == {
        "timestamp": values["timestamp"] + 100, "node": values["node"], "sequence": 0,
    }  # fmt: skip
    again = conn.execute(
        "SELECT idfields.issue_snowflake_at(%s, NULL)", [values["timestamp"]]
    ).fetchone()[0]
    assert again == ahead + 1  # never behind the last ID


def test_a_restarted_sequence_is_never_taken_for_a_fresh_one(connect: Connect) -> None:
    """ALTER SEQUENCE ... RESTART on the backend's temporary sequence between transactions: its
    last value reads NULL, and the next ID must not be the first of the tick again."""
    conn = connect()
    tick = SNOWFLAKE.tick_of(time.time_ns())
    first = [conn.execute("SELECT idfields.next_snowflake_at(%s)", [tick]).fetchone()[0]]
    first += [conn.execute("SELECT idfields.next_snowflake_at(%s)", [tick]).fetchone()[0]]
    conn.execute("ALTER SEQUENCE pg_temp.idfields_snowflake RESTART")
    after = conn.execute("SELECT idfields.next_snowflake_at(%s)", [tick]).fetchone()[0]
    assert after not in first
