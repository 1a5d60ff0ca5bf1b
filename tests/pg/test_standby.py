"""A real hot standby (streaming from a throwaway primary): the generators refuse with
idfields' own error (SQLSTATE 25006, a hint naming the way out), also under
``default_transaction_read_only``, and the decoders work there, instead of PostgreSQL's
'cannot execute CREATE SEQUENCE in a read-only transaction'."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from databases import DbUrl

from idfields.layouts import get_layout
from tests.pg.conftest import Pair

pytestmark = pytest.mark.postgres

GENERATORS = [
    "idfields.next_snowflake()",
    "idfields.next_traceid()",
    "idfields.next_decimal()",
    "(SELECT count(*) FROM idfields.take_snowflake(1000))",
    "(SELECT count(*) FROM idfields.take_traceid(10))",
    "(SELECT count(*) FROM idfields.take_snowflake_ranges(1000))",
]


def connection(url: DbUrl, read_only: bool) -> psycopg.Connection:
    options = "-c default_transaction_read_only=on" if read_only else ""
    return psycopg.connect(**url.psycopg_kwargs(), autocommit=True, options=options)


@pytest.fixture(params=[False, True], ids=["", "default-read-only"])
def standby(
    primary_and_standby: Pair, request: pytest.FixtureRequest
) -> Iterator[psycopg.Connection]:
    with connection(primary_and_standby.standby, request.param) as conn:
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
        yield conn


@pytest.mark.parametrize("call", GENERATORS)
def test_a_standby_refuses_with_an_idfields_error(standby: psycopg.Connection, call: str) -> None:
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction) as caught:
        standby.execute(f"SELECT {call}".encode())
    assert caught.value.sqlstate == "25006"
    assert str(caught.value).startswith("idfields: cannot issue")
    assert "hot standby" in str(caught.value)
    assert "primary" in (caught.value.diag.message_hint or "")
    standby.execute("SELECT 1")  # the session goes on


def test_a_standby_decodes_what_the_primary_issued(
    primary_and_standby: Pair, standby: psycopg.Connection
) -> None:
    with connection(primary_and_standby.primary, False) as primary:
        made = primary.execute(
            "SELECT idfields.next_snowflake(), idfields.next_traceid(), idfields.next_decimal()"
        ).fetchone()
    assert made is not None
    snowflake, traceid, decimal = made
    node, ms = standby.execute(
        "SELECT d.node, d.time_ms FROM idfields.decode_snowflake(%s) d",
        [snowflake],
    ).fetchone()
    decoded = get_layout("snowflake").decode(snowflake)
    assert node == decoded.values["node"] and ms == decoded.time_ns // 10**6
    assert standby.execute("SELECT (idfields.decode_traceid(%s)).node_no", [traceid]).fetchone()
    launch = standby.execute("SELECT (idfields.decode_decimal(%s)).launch_id", [decimal])
    assert launch.fetchone() == (1,)


@pytest.mark.parametrize("call", GENERATORS)
def test_a_default_read_only_session_on_the_primary_gets_an_idfields_error(
    primary_and_standby: Pair, call: str
) -> None:
    with (
        connection(primary_and_standby.primary, True) as conn,
        pytest.raises(psycopg.errors.ReadOnlySqlTransaction) as caught,
    ):
        conn.execute(f"SELECT {call}".encode())
    assert str(caught.value).startswith("idfields: cannot issue")
    assert "read-only transaction" in str(caught.value)
    assert "read-write" in (caught.value.diag.message_hint or "")
