"""A DB-API adapter of ``idfields.coordination.Database`` for the tests: the protocol is small
enough that a raw driver connection serves it in a few lines, with no ORM around it."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg
import pymysql  # type: ignore[import-untyped,unused-ignore]
from databases import DbUrl
from pymysql.constants import CLIENT  # type: ignore[import-untyped,unused-ignore]
from schema_ddl import create_tables

from idfields.coordination import Result

SCHEMA = {vendor: create_tables(vendor) for vendor in ("postgresql", "mysql", "sqlite")}


class DbApiDatabase:
    """One autocommit connection per process (re-opened after fork), transactions on demand."""

    def __init__(self, vendor: str, target: str) -> None:
        self.vendor = vendor
        self.target = target  # a server URL, or the SQLite file
        self._pid = -1
        self._conn: Any = None

    def __repr__(self) -> str:
        return f"DbApiDatabase({self.vendor})"

    def _connection(self) -> Any:
        # A forked child never uses its parent's socket; a connection the server dropped (a
        # restart, a failover) is opened again, as a pool or Django's next request does.
        if self._pid != os.getpid() or getattr(self._conn, "closed", False):
            self._conn = _CONNECT[self.vendor](self.target)
            self._pid = os.getpid()
        return self._conn

    def execute(self, sql: str, params: Sequence[object] = ()) -> Result:
        conn = self._connection()
        if self.vendor == "sqlite":
            sql = sql.replace("%s", "?")
        cursor = conn.cursor()
        try:
            cursor.execute(sql, tuple(params))
            rows = [tuple(row) for row in cursor.fetchall()] if cursor.description else []
            return Result(rows, cursor.rowcount)
        finally:
            cursor.close()

    @contextmanager
    def atomic(self) -> Iterator[None]:
        begin = "BEGIN IMMEDIATE" if self.vendor == "sqlite" else "BEGIN"
        self.execute(begin)
        try:
            yield
        except BaseException:
            self.execute("ROLLBACK")
            raise
        self.execute("COMMIT")

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None
        self._pid = -1


def _postgres(url: str) -> Any:
    return psycopg.connect(**DbUrl.parse(url).psycopg_kwargs(), autocommit=True)


def _mysql(url: str) -> Any:
    kwargs = DbUrl.parse(url).pymysql_kwargs()
    # READ COMMITTED and FOUND_ROWS, as Django's MySQL backend connects.
    conn = pymysql.connect(**kwargs, autocommit=True, client_flag=CLIENT.FOUND_ROWS)
    with conn.cursor() as cursor:
        cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
    return conn


def _sqlite(path: str) -> Any:
    return sqlite3.connect(path, timeout=30, isolation_level=None)


_CONNECT: dict[str, Callable[[str], Any]] = {
    "postgresql": _postgres,
    "mysql": _mysql,
    "sqlite": _sqlite,
}


class Repointed:
    """The coordination ``Database`` on a PostgreSQL server that changes under it, as a pooler
    or DNS name repointed by a failover, a restore or a cutover."""

    vendor = "postgresql"

    def __init__(self, url: str) -> None:
        self.inner = DbApiDatabase("postgresql", url)

    def repoint(self, url: str) -> None:
        self.inner.close()
        self.inner = DbApiDatabase("postgresql", url)

    def execute(self, sql: str, params: Sequence[object] = ()) -> Result:
        return self.inner.execute(sql, params)

    def atomic(self) -> AbstractContextManager[None]:
        return self.inner.atomic()

    def close(self) -> None:
        self.inner.close()
