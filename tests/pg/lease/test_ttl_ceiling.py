"""The lease ttl ceiling (L11): the longest ttl an app claim on PostgreSQL may use, recorded
before any longer one is used, so that the grace after a loss covers the ttls of processes
whose record the loss took with it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import databases
import psycopg
import pytest
from dbapi_database import DbApiDatabase

from idfields import sql
from idfields.coordination import LeaseSource, set_lease_ttl_ceiling
from idfields.errors import InvalidArgument, NodeError
from idfields.layouts import get_layout
from tests.pg.conftest import TABLES
from tests.pg.lease.test_lease_scenarios import OTHER

pytestmark = pytest.mark.postgres


@pytest.fixture
def database(postgres_url: str) -> Iterator[DbApiDatabase]:
    with databases.scratch_database(postgres_url) as url:
        kwargs = databases.DbUrl.parse(url).psycopg_kwargs()
        with psycopg.connect(**kwargs, autocommit=True) as conn:
            conn.execute(TABLES)
            conn.execute(sql.load(sql.VERSION).encode())
        made = DbApiDatabase("postgresql", url)
        yield made
        made.close()


def as_a_copy(database: DbApiDatabase) -> None:
    """Another database's identity recorded: the next claim sees a change and begins a grace."""
    database.execute(
        "INSERT INTO idfields_counter (name, value) VALUES (%s, 0)", [f"identity:{OTHER}"]
    )


def test_a_ttl_above_the_ceiling_is_refused_naming_the_fix(database: DbApiDatabase) -> None:
    """60 s where none is recorded: a 61 s claim is refused, a raise lets it claim."""
    with pytest.raises(InvalidArgument, match=r"ceiling, 60 s.*set_lease_ttl_ceiling"):
        LeaseSource(database, ttl_s=61).acquire(get_layout("snowflake"))
    set_lease_ttl_ceiling(database, 61)
    lease = LeaseSource(database, ttl_s=61).acquire(get_layout("snowflake"))
    assert lease.release is not None
    lease.release(0)


@pytest.mark.parametrize("ttl_s", [0, -1, 86_401])
def test_a_ceiling_out_of_range_is_refused(database: DbApiDatabase, ttl_s: float) -> None:
    with pytest.raises(InvalidArgument, match=r"0\.003\.\.86400 seconds"):
        set_lease_ttl_ceiling(database, ttl_s)


def test_a_refused_ttl_does_not_lengthen_the_grace_it_meets(database: DbApiDatabase) -> None:
    """A claim on a ttl above a 2 s ceiling, the first to see another identity (a copy): it is
    refused, and the grace that begins covers the ceiling, not the refused hour (every claim
    was refused for an hour)."""
    set_lease_ttl_ceiling(database, 2)
    as_a_copy(database)
    with pytest.raises(InvalidArgument, match=r"ceiling, 2 s"):
        LeaseSource(database, ttl_s=3600).acquire(get_layout("snowflake"))
    with pytest.raises(NodeError, match=r"s from now"):
        LeaseSource(database, ttl_s=1).acquire(get_layout("snowflake"))
    (now, grace_end), *_ = database.execute(
        "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint, max(value) "
        "FROM idfields_counter WHERE name LIKE 'identity:%%'"
    ).rows
    assert grace_end - now <= 2000 + 1000, f"a grace of {(grace_end - now) / 1000:.0f} s"


def test_backends_alone_claim_once_the_new_epoch_is_recorded_in_a_transaction_of_its_own(
    database: DbApiDatabase, postgres_url: str
) -> None:
    """A copy (another identity recorded), a 1 s ceiling, only database sessions claiming:
    each refusal rolls back the epoch it recorded, so the wait starts again; recorded once in
    a transaction of its own, as the refusal's hint says, the grace ends."""
    set_lease_ttl_ceiling(database, 1)
    as_a_copy(database)
    kwargs = databases.DbUrl.parse(postgres_url).psycopg_kwargs()
    kwargs["dbname"] = database.execute("SELECT current_database()").rows[0][0]
    with psycopg.connect(**kwargs, autocommit=True) as conn:
        for _ in range(2):
            with pytest.raises(psycopg.errors.CannotConnectNow, match="transaction of its own"):
                conn.execute("SELECT idfields.next_snowflake()")
            time.sleep(2.5)
        conn.execute("SELECT idfields.database_epoch(0)")
        time.sleep(2.5)
        assert conn.execute("SELECT idfields.next_snowflake()").fetchone() is not None
