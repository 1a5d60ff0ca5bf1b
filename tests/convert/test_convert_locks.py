"""A lock held elsewhere: every conversion gives up within its lock timeout, names the holder's
pid and changes nothing (Django, Alembic, run_online on PostgreSQL; Django on MariaDB)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pymysql  # type: ignore[import-untyped,unused-ignore]
import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from databases import DbUrl

import idfields.migrations.alembic  # noqa: F401  (registers the operations)
from idfields.errors import LockTimeout
from idfields.migrations import convert
from tests.convert.catalog import catalog
from tests.convert.djapp.harness import ConvApp

Run = Callable[..., list[tuple[Any, ...]]]
# The lock_timeout of the operations below is 2s; the margin is for a loaded machine.
WITHIN = 10.0


class Blocker:
    """Another session holding a lock until released (PostgreSQL: a transaction)."""

    def __init__(self, url: str) -> None:
        self.conn = psycopg.connect(**DbUrl.parse(url).psycopg_kwargs())
        self.pid = self.conn.info.backend_pid

    def hold(self, table: str) -> Blocker:
        self.conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        return self

    def close(self) -> None:
        """End the transaction, and with it the lock (again: a no-op)."""
        self.conn.close()


@pytest.fixture
def blocker(postgres_url: str) -> Iterator[Callable[[str], Blocker]]:
    made: list[Blocker] = []

    def hold(table: str) -> Blocker:
        made.append(Blocker(postgres_url).hold(table))
        return made[-1]

    yield hold
    for each in made:
        each.close()


def timed_out(run: Callable[[], object], pid: int) -> LockTimeout:
    started = time.monotonic()
    with pytest.raises(LockTimeout) as raised:
        run()
    assert time.monotonic() - started < WITHIN
    assert f"pid {pid} " in str(raised.value), raised.value
    return raised.value


def pg_schema(pg: Run) -> None:
    pg("CREATE TABLE conv.lk (id serial PRIMARY KEY)")
    pg("CREATE TABLE conv.lk_ref (id serial PRIMARY KEY, lk_id integer REFERENCES conv.lk)")
    pg("INSERT INTO conv.lk SELECT FROM generate_series(1, 10)")


def pg_state(pg: Run) -> tuple[object, ...]:
    types = pg(
        "SELECT table_name, column_name, data_type, column_default FROM "
        "information_schema.columns WHERE table_schema = 'conv' ORDER BY 1, 2"
    )
    return (catalog("postgresql", pg, ("lk", "lk_ref")), types)


def test_alembic_gives_up_naming_the_holder(
    pg: Run, postgres_url: str, blocker: Callable[[str], Blocker]
) -> None:
    pg_schema(pg)
    before = pg_state(pg)
    holder = blocker("conv.lk")
    engine = sa.create_engine(DbUrl.parse(postgres_url).sqlalchemy_url())
    try:
        with engine.begin() as conn:
            op: Any = Operations(MigrationContext.configure(conn))
            error = timed_out(
                lambda: op.convert_to_ksorted_id("lk", schema="conv", lock_timeout="2s"),
                holder.pid,
            )
            assert "AccessExclusiveLock" in str(error)
            # The migration's transaction is usable: the failure was confined to a savepoint.
            assert conn.exec_driver_sql("SHOW lock_timeout").scalar_one() == "0"
    finally:
        engine.dispose()
    holder.close()
    assert pg_state(pg) == before


def test_run_online_gives_up_naming_the_holder(pg: Run, blocker: Callable[[str], Blocker]) -> None:
    pg_schema(pg)
    before = pg_state(pg)
    key = convert.introspect("postgresql", lambda sql, p: pg(sql, *p), "lk", schema="conv")
    holder = blocker("conv.lk_ref")
    target = convert.Target.of("snowflake", lock_timeout="2s")
    timed_out(lambda: convert.run_online(lambda sql: pg(sql), key, target), holder.pid)
    holder.close()
    assert pg_state(pg) == before
    assert pg("SHOW lock_timeout") == [("0",)]


@pytest.mark.parametrize("convapp", [("postgresql", "migrations")], indirect=True)
def test_django_gives_up_naming_the_holder(
    convapp: ConvApp, blocker: Callable[[str], Blocker]
) -> None:
    app = convapp
    app.migrate("0001_initial")
    app.models("0001_initial")("Parent").objects.using(app.alias).create(name="p")
    before = app.sql(
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_name LIKE 'convapp%%' ORDER BY 1, 2"
    )
    holder = blocker("convapp_parent")
    timed_out(lambda: app.migrate("0002_convert"), holder.pid)
    holder.close()
    assert before == app.sql(
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_name LIKE 'convapp%%' ORDER BY 1, 2"
    )
    assert app.sql("SELECT name FROM django_migrations WHERE app = 'convapp'") == [
        ("0001_initial",)
    ]
    app.migrate("0002_convert")  # once the holder is gone, the same migration goes through


@pytest.mark.parametrize("convapp", [("mysql", "migrations")], indirect=True)
def test_django_mysql_gives_up_naming_the_holder(convapp: ConvApp, mysql_url: str) -> None:
    app = convapp
    app.migrate("0001_initial")
    app.models("0001_initial")("Parent").objects.using(app.alias).create(name="p")
    tables = ("convapp_parent", "convapp_child", "convapp_parent_tags")
    before = catalog("mysql", app.sql, tables)
    reader = pymysql.connect(**DbUrl.parse(mysql_url).pymysql_kwargs())
    try:
        with reader.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("SELECT * FROM convapp_parent")  # a metadata lock until it ends
            cursor.execute("SELECT CONNECTION_ID()")
            (pid,) = cursor.fetchone()
        timed_out(lambda: app.migrate("0002_convert"), pid)
    finally:
        reader.close()
    assert catalog("mysql", app.sql, tables) == before
    app.migrate("0002_convert")


def test_introspection_alone_gives_up(pg: Run, blocker: Callable[[str], Blocker]) -> None:
    """What run_online's caller does first: read the key (its max(id) waits for the lock)."""
    pg_schema(pg)
    holder = blocker("conv.lk")
    timed_out(
        lambda: convert.introspect(
            "postgresql", lambda sql, p: pg(sql, *p), "lk", schema="conv", lock_timeout="2s"
        ),
        holder.pid,
    )
