"""Two-phase commit on a throwaway primary (max_prepared_transactions > 0).

PREPARE TRANSACTION after a database-side ID is refused by PostgreSQL itself with
'cannot PREPARE a transaction that has operated on temporary objects' (SQLSTATE 0A000): the
backend's position is a temporary sequence. No idfields error can come first: PrepareTransaction
(src/backend/access/transam/xact.c) runs user code only through deferred triggers, which fire
alike at COMMIT and PREPARE, and its one PREPARE-only hook (XACT_EVENT_PRE_PREPARE) takes C
callbacks. The transaction is rolled back; nothing issued before is repeated, and the session goes
on. App-side IDs (a generator leasing its node from the same table) prepare and commit fine.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from dbapi_database import DbApiDatabase
from psycopg import sql

from idfields import make_generator
from idfields.coordination import LeaseSource
from idfields.layouts import SNOWFLAKE
from tests.pg.conftest import Pair, fill_but

pytestmark = pytest.mark.postgres


def snowflakes(conn: psycopg.Connection, n: int) -> list[int]:
    rows = conn.execute("SELECT idfields.next_snowflake() FROM generate_series(1, %s)", [n])
    return [row[0] for row in rows.fetchall()]


def node_of(value: int) -> int:
    return int(SNOWFLAKE.decode(value).values["node"])


@pytest.fixture
def primary(primary_and_standby: Pair) -> Iterator[psycopg.Connection]:
    """An admin connection to the primary; lease rows and prepared transactions cleaned up."""
    with psycopg.connect(**primary_and_standby.primary.psycopg_kwargs(), autocommit=True) as admin:
        yield admin
        rollback_prepared(admin)
        admin.execute("DELETE FROM idfields_node_lease WHERE layout = 'snowflake'")


def rollback_prepared(admin: psycopg.Connection) -> None:
    """Prepared transactions left by a failed test (they would hold their locks forever)."""
    for (gid,) in admin.execute("SELECT gid FROM pg_prepared_xacts").fetchall():
        admin.execute(sql.SQL("ROLLBACK PREPARED {}").format(sql.Literal(gid)))


@pytest.fixture
def app_database(primary_and_standby: Pair) -> Iterator[DbApiDatabase]:
    database = DbApiDatabase("postgresql", str(primary_and_standby.primary))
    yield database
    database.close()


def test_prepare_after_a_database_side_id_is_refused_and_nothing_repeats(
    primary_and_standby: Pair, primary: psycopg.Connection, app_database: DbApiDatabase
) -> None:
    fill_but(primary, {5: -3, 6: -2, 7: -1})
    kwargs = primary_and_standby.primary.psycopg_kwargs()
    with psycopg.connect(**kwargs) as conn, psycopg.connect(**kwargs, autocommit=True) as other:
        before = snowflakes(conn, 100)  # this transaction claims node 5, the oldest lapsed row
        assert node_of(before[0]) == 5
        with pytest.raises(psycopg.errors.FeatureNotSupported) as caught:
            conn.execute("PREPARE TRANSACTION 'idfields-db-side'")
        assert caught.value.sqlstate == "0A000"
        assert "operated on temporary objects" in str(caught.value)
        conn.rollback()  # the claim and its lease row are rolled back; the node's lock stays
        assert primary.execute("SELECT count(*) FROM pg_prepared_xacts").fetchone() == (0,)
        generator = make_generator("snowflake", LeaseSource(app_database))
        try:
            app = generator.take(1000)
        finally:
            generator.close()
        after = snowflakes(conn, 100)  # the session goes on, on its node, after what it issued
        conn.commit()
        theirs = snowflakes(other, 100)
    assert node_of(app[0]) != 5 and node_of(after[0]) == 5 and after[0] > before[-1]
    every = before + after + app + theirs
    assert len(every) == len(set(every))


def test_two_phase_commit_with_app_side_ids(
    primary_and_standby: Pair, primary: psycopg.Connection, app_database: DbApiDatabase
) -> None:
    primary.execute("CREATE TABLE two_phase_rows (id bigint PRIMARY KEY, payload text)")
    generator = make_generator("snowflake", LeaseSource(app_database))
    conn = psycopg.connect(**primary_and_standby.primary.psycopg_kwargs())
    try:
        xid = conn.xid(1, "idfields-app-side", "branch-1")
        conn.tpc_begin(xid)
        ids = generator.take(1000)
        with conn.cursor() as cursor:
            cursor.executemany("INSERT INTO two_phase_rows VALUES (%s, 'x')", [(i,) for i in ids])
        conn.tpc_prepare()
        conn.close()  # the prepared transaction outlives its session
        prepared = primary.execute("SELECT gid FROM pg_prepared_xacts").fetchall()
        assert prepared == [(str(xid),)]
        primary.execute(sql.SQL("COMMIT PREPARED {}").format(sql.Literal(str(xid))))
        stored = primary.execute("SELECT id FROM two_phase_rows ORDER BY id").fetchall()
        assert [row[0] for row in stored] == sorted(ids) and len(set(ids)) == 1000
    finally:
        generator.close()
        conn.close()
        rollback_prepared(primary)
        primary.execute("DROP TABLE two_phase_rows")
