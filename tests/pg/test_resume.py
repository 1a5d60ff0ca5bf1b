"""A transaction's first ID resumes the session's claim without the PL/pgSQL slow path, and
still takes the slow path whenever the slow path would do more than confirm the claim.

The slow path's calls are counted through ``pg_stat_user_functions`` (``track_functions``
set in the session under test): a hot path that sent every transaction's first ID there would
count one call per transaction (100 of 100).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from idfields.layouts import SNOWFLAKE
from tests.pg.conftest import (
    end_window,
    function_calls,
    install_layouts,
    one_id,
    single_row_inserts,
)
from tests.pg.sample_layouts import NARROW

SLOW_PATHS = {
    "next_snowflake": "time_slow_path",
    "next_traceid": "time_slow_path",
    "next_narrow": "time_slow_path",
    "next_decimal": "decimal_slow_path",
}


@pytest.fixture(scope="module", autouse=True)
def narrow_and_a_launch(pg_kwargs: dict[str, object]) -> None:
    install_layouts(pg_kwargs, NARROW)


@pytest.mark.parametrize("function", list(SLOW_PATHS))
def test_a_transactions_first_id_skips_the_slow_path(
    counted: psycopg.Connection, function: str
) -> None:
    """Not one slow-path call per single-statement transaction (100 of 100)."""
    ids = [one_id(counted, function)]  # claims
    before = function_calls(counted, SLOW_PATHS[function])
    ids += [one_id(counted, function) for _ in range(100)]
    # lease renewals (twice a second at most) and traceid's new seconds may still take it
    assert function_calls(counted, SLOW_PATHS[function]) - before <= 10
    assert len(set(ids)) == len(ids)


def test_an_insert_default_resumes_too(counted: psycopg.Connection) -> None:
    single_row_inserts(counted, 1)  # claims
    before = function_calls(counted, "time_slow_path")
    single_row_inserts(counted, 100)
    assert function_calls(counted, "time_slow_path") - before <= 10


def test_a_position_off_the_claims_node_takes_the_slow_path(connect: Any) -> None:
    """The sequence holds an ID of another node (as after a rolled-back claim): the next
    transaction goes on on the claim's node, at a new tick, never on the other node."""
    conn = connect()
    first = one_id(conn, "next_snowflake")
    node = SNOWFLAKE.decode(first).values["node"]
    other = (node + 1) % 1024
    conn.execute(
        "SELECT setval('pg_temp.idfields_snowflake', %s)", [(first & ~(1023 << 12)) | other << 12]
    )
    after = one_id(conn, "next_snowflake")
    assert SNOWFLAKE.decode(after).values["node"] == node
    assert after > first


def test_a_window_that_ends_takes_the_slow_path_once(counted: psycopg.Connection) -> None:
    """The window ends at the last ID (as when the clock reaches its limit): the next ID takes
    the slow path once, which writes the window again, past that ID."""
    last = one_id(counted, "next_snowflake")
    before = function_calls(counted, "time_slow_path")
    end_window(counted, "snowflake")
    one_id(counted, "next_snowflake")
    assert function_calls(counted, "time_slow_path") - before == 1
    window = """SELECT pg_sequence_last_value('pg_temp."idfields:snowflake"')"""
    assert counted.execute(window).fetchone()[0] > last


def test_a_rolled_back_renewal_reverts_claim_and_limit_together(connect: Any) -> None:
    conn = connect(autocommit=False)
    one_id(conn, "next_snowflake")
    # a claim due for renewal: its promise and limit long past, its window ended
    conn.execute(
        "SELECT set_config('idfields.snowflake_lease', regexp_replace("
        "current_setting('idfields.snowflake_lease'), '^([^:]*:[^:]*):[^:]*', '\\1:0'), false), "
        "set_config('idfields.snowflake_limit', '0', false)"
    )
    end_window(conn, "snowflake")
    conn.commit()
    settings = "SELECT current_setting('idfields.snowflake_lease'), " \
        "current_setting('idfields.snowflake_limit')"  # fmt: skip
    due = conn.execute(settings).fetchone()
    one_id(conn, "next_snowflake")  # renews: a new claim and limit, inside this transaction
    assert conn.execute(settings).fetchone() != due
    conn.rollback()
    assert conn.execute(settings).fetchone() == due
    conn.rollback()


@pytest.mark.parametrize("reset", ["DISCARD SEQUENCES", "DISCARD TEMP", "RESET ALL"])
def test_resets_between_transactions_never_repeat(connect: Any, reset: str) -> None:
    conn = connect()
    ids: list[int] = []
    for _ in range(20):
        ids += [one_id(conn, "next_snowflake") for _ in range(3)]
        conn.execute(reset.encode())
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize(("function", "layout"), [("next_snowflake", "snowflake"),
                                                   ("next_narrow", "narrow")])  # fmt: skip
def test_a_read_only_transaction_issues_inside_the_window_and_is_refused_past_it(
    connect: Any, function: str, layout: str
) -> None:
    """Inside the window the session holds no write is needed; past it the lease row would be
    renewed, which a read-only transaction may not: idfields' error."""
    conn = connect(autocommit=False)
    first = one_id(conn, function)
    conn.commit()
    conn.execute("SET TRANSACTION READ ONLY")
    assert one_id(conn, function) > first
    end_window(conn, layout)
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction, match=r"^idfields: cannot issue"):
        one_id(conn, function)
    conn.rollback()


def test_a_read_only_transaction_after_decimal_ids_gets_the_idfields_error(connect: Any) -> None:
    conn = connect(autocommit=False)
    one_id(conn, "next_decimal")
    conn.commit()
    conn.execute("SET TRANSACTION READ ONLY")
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction, match=r"^idfields: cannot issue"):
        one_id(conn, "next_decimal")
    conn.rollback()


@pytest.fixture
def tenant_copy(connect: Any) -> Iterator[str]:
    admin = connect()
    schema = f"tenant_{secrets.token_hex(3)}"
    admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    admin.execute(
        sql.SQL(
            "CREATE TABLE {}.idfields_node_lease (LIKE public.idfields_node_lease INCLUDING ALL)"
        ).format(sql.Identifier(schema))
    )
    yield schema
    admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def test_another_lease_table_on_the_search_path_is_refused_after_ids(
    connect: Any, tenant_copy: str
) -> None:
    conn = connect()
    one_id(conn, "next_snowflake")
    conn.execute(sql.SQL("SET search_path = {}, public").format(sql.Identifier(tenant_copy)))
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match=tenant_copy):
        one_id(conn, "next_snowflake")


def test_a_transaction_made_read_only_after_its_first_id_goes_on_until_it_would_renew(
    connect: Any,
) -> None:
    """SET TRANSACTION READ ONLY after the first ID: the lease that ID validated needs no write,
    so IDs go on inside it; a tick past its limit, which would renew the lease row, is refused
    with idfields' error."""
    conn = connect(autocommit=False)
    tick = conn.execute("SELECT idfields.clock_ms() - 1704067200000").fetchone()[0]
    first = conn.execute("SELECT idfields.next_snowflake_at(%s)", [tick]).fetchone()[0]
    conn.execute("SET TRANSACTION READ ONLY")
    more = conn.execute(
        "SELECT idfields.next_snowflake_at(%s) FROM generate_series(1, 100)", [tick]
    ).fetchall()
    assert [row[0] for row in more] == list(range(first + 1, first + 101))
    limit = int(conn.execute("SELECT current_setting('idfields.snowflake_limit')").fetchone()[0])
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction, match=r"^idfields: cannot issue"):
        conn.execute("SELECT idfields.next_snowflake_at(%s)", [limit + 1])
    conn.rollback()
