"""The core coordination's ``Database`` protocol on a SQLAlchemy engine.

Leases, launches and counters must outlive the transaction that happened to ask for an ID (a
rolled-back request must not roll back a lease), so this adapter never touches the caller's
session: it runs each statement on a connection of its own pool, committed at once, or inside
:meth:`SQLAlchemyDatabase.atomic` as one transaction.

Its own pool, not the application's: a flush that holds one pooled connection while the
generator leases a node would otherwise wait for a second one from the same, possibly
exhausted, pool. The pool is rebuilt in a forked child so no socket is shared with the parent.

Async engines: the protocol is synchronous and is called from inside a column default, so the
adapter runs on a synchronous twin of the engine, built on the sync driver of the same database
(psycopg for asyncpg and psycopg-async, PyMySQL for aiomysql/asyncmy, sqlite3 for aiosqlite).
Using ``async_engine.sync_engine`` instead would work only inside SQLAlchemy's greenlets and on
the event loop that opened the connection; the twin also works at exit (lease release), from
threads and across event loops. Called from the loop, its statements block it for a round trip:
``lease_lifespan`` moves the claim to a worker thread and each renewal to a thread of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, TextClause, create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from idfields import _forking
from idfields.coordination import Result
from idfields.coordination._database import missing_table
from idfields.errors import InvalidArgument, TablesMissing, WrongArgumentType
from idfields.sql.scripts import named_params, named_placeholders, qualify
from idfields.sqlalchemy_ext._tables import TABLES

# "no such table: x" (SQLite), 'relation "x" does not exist' (PostgreSQL), "Table 'd.x' doesn't
# exist" (MariaDB): the idfields tables were never created in this database.
_VENDORS = {"postgresql": "postgresql", "mysql": "mysql", "mariadb": "mysql", "sqlite": "sqlite"}
_SYNC_DRIVERS = {
    "asyncpg": "psycopg",
    "psycopg_async": "psycopg",
    "psycopg": "psycopg",
    "aiomysql": "pymysql",
    "asyncmy": "pymysql",
    "aiosqlite": "pysqlite",
}


def sync_url(url: str | URL) -> URL:
    """``url`` on a synchronous driver of the same database: an application's async URL
    (``postgresql+asyncpg://``...) serves the lease work, the CLI and migrations alike."""
    url = make_url(url)
    if not url.get_dialect().is_async:
        return url
    driver = _SYNC_DRIVERS.get(url.get_driver_name())
    if driver is None:
        raise InvalidArgument(
            f"no synchronous driver known for {url.drivername!r}; give the URL of a sync driver "
            "on the same database (postgresql+psycopg://, mysql+pymysql://, sqlite://)"
        )
    return url.set(drivername=f"{url.get_backend_name()}+{driver}")


class SQLAlchemyDatabase:
    """``idfields.coordination.Database`` on its own connections to ``engine``'s database.

    ``schema`` is where the idfields tables are, as SQLAlchemy names it: the ``schema`` of a
    ``MetaData(schema=...)`` holding them (on MariaDB a database, on SQLite an attached one);
    ``engine``'s ``schema_translate_map`` applies to it as to every table (``{None: "t"}``
    moves the default). With neither, the names are left to the connection (its search_path).
    """

    def __init__(self, engine: Engine | AsyncEngine, *, schema: str | None = None) -> None:
        translate = engine.get_execution_options().get("schema_translate_map") or {}
        self.schema: str | None = translate.get(schema, schema)
        if isinstance(engine, AsyncEngine):
            engine = create_engine(sync_url(engine.url))
        elif not isinstance(engine, Engine):
            raise WrongArgumentType(
                f"SQLAlchemyDatabase needs an Engine or AsyncEngine, got {engine!r}"
            )
        vendor = _VENDORS.get(engine.dialect.name)
        if vendor is None:
            raise InvalidArgument(
                f"idfields coordination supports PostgreSQL, MariaDB/MySQL and SQLite, not "
                f"{engine.dialect.name!r}; use a static node source (StaticNode) instead"
            )
        self.vendor = vendor
        # A private pool with the same connect arguments (creator) as the application's.
        self._engine = create_engine(engine.url, pool=engine.pool.recreate())
        self._process = _forking.process()
        self._local = threading.local()
        self._statements: dict[str, TextClause] = {}
        self._prefix = (
            ""
            if self.schema is None
            else engine.dialect.identifier_preparer.quote_schema(self.schema) + "."
        )

    def __repr__(self) -> str:
        url = self._engine.url.render_as_string(hide_password=True)
        return f"SQLAlchemyDatabase({url}, schema={self.schema!r})"

    def execute(self, sql: str, params: Sequence[object] = ()) -> Result:
        """Run one statement (``%s`` placeholders), committed at once unless inside atomic()."""
        statement = self._statement(sql)
        bound = named_params(params)
        connection: Connection | None = getattr(self._local, "connection", None)
        if connection is not None:
            return _run(connection, statement, bound)
        with self._connect() as connection, connection.begin():
            return _run(connection, statement, bound)

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """One transaction for the statements inside; nested blocks join the outer one."""
        if getattr(self._local, "connection", None) is not None:
            yield
            return
        with self._connect() as connection, connection.begin():
            self._local.connection = connection
            try:
                yield
            finally:
                self._local.connection = None

    def dispose(self) -> None:
        """Close the adapter's pooled connections."""
        self._engine.dispose()

    def _connect(self) -> Connection:
        here = _forking.process()
        if here is not self._process:  # forked: leave the parent's connections alone
            self._engine.dispose(close=False)
            self._process = here
        connection = self._engine.connect()
        if self.vendor == "mysql":  # Django's default there; REPEATABLE READ would hide rows
            connection.execution_options(isolation_level="READ COMMITTED")
        return connection

    def _statement(self, sql: str) -> TextClause:
        """``%s`` placeholders as bind parameters, so every driver's paramstyle works, and the
        idfields tables in ``schema``."""
        statement = self._statements.get(sql)
        if statement is None:
            qualified = qualify(sql, TABLES, self._prefix) if self._prefix else sql
            statement = self._statements[sql] = text(named_placeholders(qualified))
        return statement


def _run(connection: Connection, statement: TextClause, params: dict[str, object]) -> Result:
    try:
        result = connection.execute(statement, params)
    except DBAPIError as error:
        table = missing_table(error.orig or error)
        if table is None:
            raise
        url = connection.engine.url.render_as_string(hide_password=True)
        raise TablesMissing(
            f"table {table} does not exist in {url}: create the idfields tables with "
            "Base.metadata.create_all(engine) (any metadata holding an id_column has them, or "
            "call idfields.sqlalchemy_ext.add_tables(metadata)), or in an Alembic migration "
            "op.create_idfields_tables(); if they are in another schema (MetaData(schema=...)), "
            "name it: SQLAlchemyDatabase(engine, schema=...)"
        ) from error
    rows = [tuple(row) for row in result.all()] if result.returns_rows else []  # one fetch
    return Result(rows=rows, rowcount=result.rowcount)
