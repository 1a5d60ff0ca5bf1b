"""A temporary sequence that a rollback gives back repeats no ID (invariant D7 of
docs/explanation/lease-protocol-database.md).

``DISCARD TEMP`` (any role may run it, inside a transaction too) before a transaction's first
ID drops ``pg_temp.idfields_<layout>``; the next call makes a new sequence and takes the
backend's own live row back behind its limit (D2), so its IDs lie in the ticks just past that
limit. The transaction (or its savepoint) then rolls back: the drop is undone, and the old
sequence comes back with its old value, beside the claim settings and lease row of the claim
made before, all consistent with each other. The session goes on from that position; past its
limit it renews its claim, or (after ``RESET ALL``) continues the position on the node whose
advisory lock it holds: either starts at the node's durable fence, which the rolled-back
re-take raised over its ticks, so the re-take's IDs never come again. The decimal layout takes
a new block of ``idfields.decimal_issued`` for the re-take (D8), which the rollback leaves
taken.

Each case runs on both hot paths (PL/pgSQL and the C extension), under the application role
with the documented grants.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg import sql as pgsql

from tests.pg.conftest import BOTH_PATHS, Connect, install_layouts

Ids = list[int]

#: Each time layout's timestamp shift: an ID's tick is id >> shift (traceid's mod 2^25, which
#: does not wrap during a test).
SHIFT = {"snowflake": 22, "traceid": 38}


def session(connect: Connect, app_role: str) -> psycopg.Connection[Any]:
    return connect(user=app_role)


def take(conn: psycopg.Connection[Any], layout: str, count: int) -> Ids:
    query = pgsql.SQL("SELECT idfields.{}() FROM generate_series(1, %s)").format(
        pgsql.Identifier(f"next_{layout}")
    )
    return [int(row[0]) for row in conn.execute(query, [count]).fetchall()]


def issued_again(conn: psycopg.Connection[Any], layout: str, rolled_back: Ids) -> int:
    """How many of ``rolled_back`` one statement issues again, calling next_<layout>() once a
    row until it is past their last tick (each call a few microseconds: every tick the clock
    passes gets its first IDs, from its first sequence number)."""
    call, shift = pgsql.Identifier(f"next_{layout}"), SHIFT[layout]
    query = pgsql.SQL(
        "WITH RECURSIVE r(id) AS (SELECT idfields.{call}() UNION ALL "
        "SELECT idfields.{call}() FROM r WHERE r.id >> {shift} <= %s) "
        "SELECT count(*) FROM r WHERE r.id = ANY(%s)"
    ).format(call=call, shift=pgsql.Literal(shift))
    row = conn.execute(query, [max(rolled_back) >> shift, rolled_back]).fetchone()
    assert row is not None
    return int(row[0])


def repeated_after_restored_sequence(
    conn: psycopg.Connection[Any], layout: str, savepoint: bool, reset: str
) -> int:
    """How many IDs of a rolled-back re-take the restored sequence issues again."""
    take(conn, layout, 1)  # a committed claim on sequence A
    conn.execute("BEGIN")
    if savepoint:
        conn.execute("SAVEPOINT s")
    conn.execute("DISCARD TEMP")
    rolled_back = take(conn, layout, 20_000)  # B: the own row re-taken past its limit
    conn.execute("ROLLBACK TO SAVEPOINT s" if savepoint else "ROLLBACK")
    if reset:
        conn.execute(reset)
    repeated = issued_again(conn, layout, rolled_back)  # A again, through the re-take's ticks
    if savepoint:
        conn.execute("COMMIT")
    return repeated


#: The transaction (or only a savepoint) rolled back; then nothing, or a reset that drops the
#: restored claim settings (RESET ALL: the slow path continues the restored position on the
#: node whose advisory lock it holds).
CASES = pytest.mark.parametrize(
    ("savepoint", "reset"),
    [(False, ""), (True, ""), (False, "RESET ALL")],
    ids=["rollback", "savepoint", "rollback-reset-all"],
)


@BOTH_PATHS
@CASES
def test_a_snowflake_sequence_restored_by_a_rollback_repeats_no_id(
    connect: Connect, app_role: str, savepoint: bool, reset: str
) -> None:
    """20,000 IDs over about 5 ticks in the rolled-back part (measured without the fence on
    the renewal and the continuation: 1,858 to 3,282 issued again)."""
    conn = session(connect, app_role)
    assert repeated_after_restored_sequence(conn, "snowflake", savepoint, reset) == 0


@BOTH_PATHS
def test_a_traceid_sequence_restored_by_a_rollback_repeats_no_id(
    connect: Connect, app_role: str
) -> None:
    """traceid (1 s ticks, max_ahead 1): the re-take lands on the backend's own node when its
    limit is at most one tick ahead, which depends on where in the second it runs; three
    rounds (measured without the fence: 20,000 of 20,000 repeated in 2 of 3 rounds)."""
    conn = session(connect, app_role)
    repeated = [repeated_after_restored_sequence(conn, "traceid", False, "") for _ in "abc"]
    assert repeated == [0, 0, 0]


@BOTH_PATHS
@pytest.mark.parametrize("savepoint", [False, True], ids=["rollback", "savepoint"])
def test_a_decimal_sequence_restored_by_a_rollback_repeats_no_id(
    connect: Connect, db_kwargs: dict[str, object], app_role: str, savepoint: bool
) -> None:
    """The rolled-back part takes a block of its own (D8), which the rollback leaves taken: the
    restored sequence goes on in its own block, then takes the next one."""
    install_layouts(db_kwargs)  # launch 1
    conn = session(connect, app_role)
    take(conn, "decimal", 1)
    conn.execute("BEGIN")
    if savepoint:
        conn.execute("SAVEPOINT s")
    conn.execute("DISCARD TEMP")
    rolled_back = take(conn, "decimal", 20_000)  # two blocks and more
    conn.execute("ROLLBACK TO SAVEPOINT s" if savepoint else "ROLLBACK")
    again = take(conn, "decimal", 30_000)  # through its own block and the next ones
    if savepoint:
        conn.execute("COMMIT")
    assert set(rolled_back).isdisjoint(again)
