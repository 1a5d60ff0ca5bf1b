"""Per-database plumbing of the comparison: DDL, the insert paths, and the size/order metrics.

DB-API drivers only (sqlite3, psycopg, PyMySQL), imported when their database is used. Every
table is named by the comparison itself (``idfields_cmp_<strategy>``), never by user input.
"""

from __future__ import annotations

import math
import os
import re
import secrets
import sqlite3
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from idfields.compare._ids import Strategy
from idfields.errors import InvalidArgument

Row = tuple[Any, ...]
COLUMNS = "seq, created_us, payload"


def now_us() -> int:
    return time.time_ns() // 1000


def rank_correlation(values: Sequence[Any]) -> float | None:
    """Spearman correlation of insertion order with key order: 1.0 when keys only grow."""
    count = len(values)
    if count < 2:
        return None
    order = sorted(range(count), key=values.__getitem__)
    ranks = [0] * count
    for rank, index in enumerate(order):
        ranks[index] = rank
    squares = sum((rank - index) ** 2 for index, rank in enumerate(ranks))
    return 1 - 6 * squares / (count * (count**2 - 1))


class Backend:
    """What differs between databases; the SQLite version is the default implementation."""

    vendor = "sqlite"
    mark = "?"
    paths: tuple[str, ...] = ("single", "batch")

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def product(self) -> str:
        """The database by its own name and version, for the report's title."""
        return f"SQLite {self.execute('SELECT sqlite_version()')[0][0]}"

    # -- DDL ---------------------------------------------------------------------------------

    def key_sql(self, strategy: Strategy) -> str:
        return {
            "auto": "INTEGER PRIMARY KEY AUTOINCREMENT",
            "bigint": "INTEGER PRIMARY KEY",
            "uuid": "BLOB PRIMARY KEY",
            "db": "INTEGER PRIMARY KEY",
        }[strategy.kind]

    def table_options(self, strategy: Strategy) -> str:
        """SQLite clusters a UUID table on its key too (as InnoDB does every table), so each
        strategy's key b-tree is its table and the sizes compare like with like."""
        return " WITHOUT ROWID" if strategy.kind == "uuid" else ""

    def create(self, table: str, strategy: Strategy) -> None:
        self.drop(table)
        self.execute(
            f"CREATE TABLE {table} (id {self.key_sql(strategy)}, seq integer NOT NULL, "
            f"created_us bigint NOT NULL, payload varchar(32) NOT NULL)"
            f"{self.table_options(strategy)}"
        )
        self.commit()

    def drop(self, table: str) -> None:
        self.execute(f"DROP TABLE IF EXISTS {table}")
        self.commit()

    # -- statements ----------------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        cursor = self.conn.cursor()
        try:
            # No parameters, no placeholders: psycopg would read the SQL's own '%I' as one.
            cursor.execute(sql, tuple(params)) if params else cursor.execute(sql)
            return [tuple(row) for row in cursor.fetchall()] if cursor.description else []
        finally:
            cursor.close()

    def commit(self) -> None:
        self.conn.commit()

    def adapt(self, value: object) -> object:
        return value.bytes if hasattr(value, "bytes") else value

    def insert_sql(self, table: str, with_id: bool) -> str:
        columns = ("id, " if with_id else "") + COLUMNS
        marks = ", ".join([self.mark] * (4 if with_id else 3))
        return f"INSERT INTO {table} ({columns}) VALUES ({marks})"  # noqa: S608 (our names)

    def rows(self, ids: list[object] | None, count: int) -> list[Row]:
        if ids is None:
            return [(i, now_us(), f"row {i}") for i in range(count)]
        return [(self.adapt(ids[i]), i, now_us(), f"row {i}") for i in range(count)]

    def insert(self, path: str, table: str, strategy: Strategy, count: int) -> None:
        """Insert ``count`` rows by ``path``; IDs are made inside the timed section."""
        if path == "insert_select":
            self.insert_select(table, strategy, count)
            return
        ids = strategy.make(count) if strategy.make is not None else None
        rows = self.rows(ids, count)
        sql = self.insert_sql(table, ids is not None)
        cursor = self.conn.cursor()
        if path == "single":
            for row in rows:
                cursor.execute(sql, row)
        elif path == "batch":
            for start in range(0, count, 1000):
                cursor.executemany(sql, rows[start : start + 1000])
        else:
            self.copy(cursor, table, rows, ids is not None)
        cursor.close()
        self.commit()

    def copy(self, cursor: Any, table: str, rows: list[Row], with_id: bool) -> None:
        raise InvalidArgument(f"COPY is a PostgreSQL path, not one of {self.vendor}'s")

    def insert_select(self, table: str, strategy: Strategy, count: int) -> None:
        raise InvalidArgument(
            f"INSERT ... SELECT is measured on PostgreSQL only, not {self.vendor}"
        )

    # -- metrics -------------------------------------------------------------------------------

    def metrics(self, table: str, strategy: Strategy) -> dict[str, Any]:
        """Sizes in bytes, leaf density (0..1) and order correlation, None where unknown."""
        # Every table is clustered on its key (an INTEGER PRIMARY KEY is the rowid; UUID tables
        # are WITHOUT ROWID): the table's own b-tree is the key's index, for every strategy.
        pages = self.execute(
            "SELECT sum(pgsize), sum(CASE WHEN pagetype = 'leaf' THEN pgsize END), "
            "sum(CASE WHEN pagetype = 'leaf' THEN unused END) FROM dbstat WHERE name = ?",
            [table],
        )[0]
        table_size = pages[0]
        ids = [row[0] for row in self.execute(f"SELECT id FROM {table} ORDER BY seq")]  # noqa: S608
        return {
            "pk_index_bytes": pages[0],
            "leaf_density": 1 - pages[2] / pages[1] if pages[1] else None,
            "table_bytes": table_size,
            "wal_bytes": None,
            "correlation": rank_correlation(ids),
        }

    def range_query(self, table: str, strategy: Strategy, since_row: int) -> tuple[float, int]:
        """Best-of-5 seconds and row count of "rows since row ``since_row`` was made".

        Time-leading keys answer with a key range (``id >= <that row's id>``, as an app does with
        the ID of a moment); others scan created_us: there is no secondary index on it, which is
        the index k-sorted keys spare you.
        """
        boundary = self.execute(
            f"SELECT id, created_us FROM {table} WHERE seq = {self.mark}",  # noqa: S608
            [since_row],
        )[0]
        if strategy.time_leading:
            sql = f"SELECT count(*) FROM {table} WHERE id >= {self.mark}"  # noqa: S608
            param = boundary[0]
        else:
            sql = f"SELECT count(*) FROM {table} WHERE created_us >= {self.mark}"  # noqa: S608
            param = boundary[1]
        best, found = math.inf, 0
        for _ in range(5):
            started = time.perf_counter()
            found = int(self.execute(sql, [param])[0][0])
            best = min(best, time.perf_counter() - started)
        return best, found

    def close(self) -> None:
        self.conn.close()


# The lease table the database-side functions claim nodes from, and the counters where they
# record the database's identity and epochs, as the Django app creates them.
_LEASE_TABLES = """CREATE TABLE {schema}.idfields_node_lease (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, layout varchar(64) NOT NULL,
    node integer NOT NULL, holder varchar(255) NOT NULL, acquired_at_ms bigint NOT NULL,
    expires_at_ms bigint NOT NULL,
    CONSTRAINT idfields_node_lease_layout_node_uniq UNIQUE (layout, node));
CREATE TABLE {schema}.idfields_counter (name varchar(100) PRIMARY KEY, value bigint NOT NULL)"""


class PostgresBackend(Backend):
    vendor = "postgresql"
    mark = "%s"
    paths = ("single", "batch", "copy", "insert_select")

    def __init__(self, conn: Any) -> None:
        """Everything the comparison makes lives in a scratch schema of its own (its tables, the
        lease table and ID functions, pgstattuple if it was missing), dropped by :meth:`close`:
        the user's ``idfields`` schema and tables are never read or changed."""
        super().__init__(conn)
        self.schema = f"idfields_cmp_{os.getpid()}_{secrets.token_hex(3)}"
        self.execute(f"CREATE SCHEMA {self.schema}")
        self.execute(f"SET search_path = {self.schema}")
        self.commit()
        self.stattuple_schema = self._pgstattuple()
        self.db_side_error = self._install_functions()
        self.db_side = self.db_side_error is None

    def _try(self, sql: str) -> str | None:
        """Run ``sql``; None when it worked, else the error on one line."""
        try:
            self.execute(sql)
            self.commit()
            return None
        except Exception as error:
            self.conn.rollback()
            return " ".join(str(error).split())

    def _pgstattuple(self) -> str | None:
        """The schema of pgstattuple (installed into the scratch schema when missing)."""
        query = (
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'pgstattuple'"
        )
        found = self.execute(query)
        if not found:
            self._try(f"CREATE EXTENSION pgstattuple SCHEMA {self.schema}")
            found = self.execute(query)
        self.commit()
        return '"' + str(found[0][0]).replace('"', '""') + '"' if found else None

    def _install_functions(self) -> str | None:
        """Install the shipped ID functions and their tables into the scratch schema."""
        from idfields import sql

        # Schema "idfields" (in names, its CREATE SCHEMA and its COMMENT) becomes the scratch
        # schema, which holds the lease table too.
        script = sql.load(sql.VERSION, lease_schema=self.schema)
        script = re.sub(r"\bidfields(?=[.;]| IS )", self.schema, script)
        return self._try(_LEASE_TABLES.format(schema=self.schema)) or self._try(script)

    def close(self) -> None:
        try:
            self.conn.rollback()
            self.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
            self.commit()
        finally:
            super().close()

    def product(self) -> str:
        version = str(self.execute("SHOW server_version")[0][0]).split()[0]
        self.commit()
        return f"PostgreSQL {version}"

    def table_options(self, strategy: Strategy) -> str:
        return ""

    def key_sql(self, strategy: Strategy) -> str:
        if strategy.kind == "auto":
            return f"{strategy.auto_sql} PRIMARY KEY"
        if strategy.kind == "db":
            return f"bigint PRIMARY KEY DEFAULT {self.schema}.next_snowflake()"
        return {"bigint": "bigint", "uuid": "uuid"}[strategy.kind] + " PRIMARY KEY"

    def adapt(self, value: object) -> object:
        return value

    def copy(self, cursor: Any, table: str, rows: list[Row], with_id: bool) -> None:
        columns = ("id, " if with_id else "") + COLUMNS
        with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def insert_select(self, table: str, strategy: Strategy, count: int) -> None:
        made = {"uuid": "gen_random_uuid(), "}.get(strategy.kind, "")
        if strategy.kind == "bigint" or strategy.name == "uuid7":
            raise InvalidArgument(f"{strategy.name} IDs are made in Python: no INSERT ... SELECT")
        columns = ("id, " if made else "") + COLUMNS
        self.execute(
            f"INSERT INTO {table} ({columns}) SELECT {made}g, "  # noqa: S608 (our names)
            "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint, 'row ' || g "
            "FROM generate_series(0, %s - 1) AS g",
            [count],
        )
        self.commit()

    def wal_position(self) -> str:
        return str(self.execute("SELECT pg_current_wal_lsn()::text")[0][0])

    def wal_since(self, start: str) -> int:
        return int(self.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", [start])[0][0])

    def metrics(self, table: str, strategy: Strategy) -> dict[str, Any]:
        self.execute(f"ANALYZE {table}")
        index = f"{table}_pkey"
        sizes = self.execute(
            "SELECT pg_relation_size(%s::regclass), pg_table_size(%s::regclass)", [index, table]
        )[0]
        density = None
        if self.stattuple_schema is not None:
            density = self.execute(
                f"SELECT avg_leaf_density FROM {self.stattuple_schema}.pgstatindex(%s)",  # noqa: S608
                [index],
            )[0][0]
            density = None if density is None or math.isnan(density) else density / 100
        correlation = self.execute(
            "SELECT correlation FROM pg_stats WHERE schemaname = current_schema() "
            "AND tablename = %s AND attname = 'id'",
            [table],
        )
        self.commit()
        return {
            "pk_index_bytes": sizes[0],
            "leaf_density": density,
            "table_bytes": sizes[1],
            "wal_bytes": None,
            "correlation": correlation[0][0] if correlation else None,
        }


class MysqlBackend(Backend):
    vendor = "mysql"
    mark = "%s"
    paths = ("single", "batch")

    def product(self) -> str:
        version = str(self.execute("SELECT VERSION()")[0][0])
        self.commit()
        name = "MariaDB" if "mariadb" in version.lower() else "MySQL"
        return f"{name} {version.split('-')[0]}"

    def table_options(self, strategy: Strategy) -> str:
        return ""

    def key_sql(self, strategy: Strategy) -> str:
        return {
            "auto": "BIGINT AUTO_INCREMENT PRIMARY KEY",
            "bigint": "BIGINT PRIMARY KEY",
            "uuid": "BINARY(16) PRIMARY KEY",
            "db": "BIGINT PRIMARY KEY",
        }[strategy.kind]

    def metrics(self, table: str, strategy: Strategy) -> dict[str, Any]:
        self.execute(f"ANALYZE TABLE {table}")
        (data,) = self.execute(
            "SELECT data_length FROM information_schema.TABLES "
            "WHERE table_schema = DATABASE() AND table_name = %s",
            [table],
        )[0]
        ids = [row[0] for row in self.execute(f"SELECT id FROM {table} ORDER BY seq")]  # noqa: S608
        self.commit()
        # InnoDB clusters rows in the primary key: the table is the PK index (data_length), for
        # every strategy alike; data_free is the tablespace's unused room, not this table.
        return {
            "pk_index_bytes": int(data),
            "leaf_density": None,
            "table_bytes": int(data),
            "wal_bytes": None,
            "correlation": rank_correlation(ids),
        }


def connect(database_url: str | None, directory: str) -> Backend:
    """A backend for the URL (postgresql://, mysql://, mariadb:// or sqlite:///path), or SQLite
    in ``directory``."""
    parts = urlsplit(database_url or "")
    scheme = parts.scheme.split("+")[0]
    if database_url is None or scheme == "sqlite":
        # sqlite:///relative.db and sqlite:////absolute.db, as SQLAlchemy writes them.
        path = parts.path[1:] if database_url else f"{directory}/compare.sqlite3"
        return Backend(sqlite3.connect(path or f"{directory}/compare.sqlite3"))
    try:
        return _connect_server(database_url, parts, scheme)
    except ImportError as error:
        raise InvalidArgument(
            f"{scheme} needs its driver: pip install 'idfields[{scheme}]' ({error})"
        ) from None
    except Exception as error:
        if isinstance(error, ValueError):
            raise
        where = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
        raise InvalidArgument(
            f"cannot connect to {scheme} at {where}: {' '.join(str(error).split())}; "
            "check --database-url"
        ) from None


def _connect_server(database_url: str, parts: Any, scheme: str) -> Backend:
    if scheme in ("postgresql", "postgres"):
        import psycopg

        return PostgresBackend(psycopg.connect(database_url.replace(parts.scheme, "postgresql", 1)))
    if scheme in ("mysql", "mariadb"):
        import pymysql

        return MysqlBackend(
            pymysql.connect(
                host=parts.hostname or "127.0.0.1",
                port=parts.port or 3306,
                user=unquote(parts.username or "root"),
                password=unquote(parts.password or ""),
                database=unquote(parts.path.lstrip("/")),
            )
        )
    raise InvalidArgument(
        f"--database-url scheme {parts.scheme!r} is not supported; use postgresql://, mysql://, "
        "mariadb:// or sqlite:///file.db (or leave it out for an embedded SQLite database)"
    )
