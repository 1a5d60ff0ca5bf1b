"""The small connection interface the coordination logic runs on, and its few dialect differences.

Django and SQLAlchemy each adapt their own connection to :class:`Database`; the logic of leases,
launches and counters is written once against it. Adapters must use a connection of their own,
never the caller's transaction: a rolled-back request must not roll back a lease.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from idfields.errors import InvalidArgument

VENDORS = ("postgresql", "mysql", "sqlite")
# SQLite's, PostgreSQL's and MariaDB/MySQL's words for "that table is not there".
_MISSING_TABLE = re.compile(
    r"no such table: (idfields_\w+)|relation \"(?:\w+\.)?(idfields_\w+)\" does not exist"
    r"|Table '(?:[^'.]*\.)?(idfields_\w+)' doesn't exist"
)


@dataclass(frozen=True)
class Result:
    """Rows of a query (empty for other statements) and the rows a statement matched."""

    rows: list[tuple[Any, ...]]
    rowcount: int


@runtime_checkable
class Database(Protocol):
    """A private connection to the database holding the coordination tables.

    - ``vendor``: "postgresql", "mysql" or "sqlite".
    - ``execute(sql, params)``: ``%s`` placeholders, values always bound; committed on its own
      unless inside ``atomic()``. ``rowcount`` counts *matched* rows: MySQL connections need
      ``CLIENT.FOUND_ROWS``, which Django and SQLAlchemy set by default.
    - ``atomic()``: one transaction around the statements executed inside it (not nestable).
    """

    @property
    def vendor(self) -> str: ...

    def execute(self, sql: str, params: Sequence[object] = ()) -> Result: ...

    def atomic(self) -> AbstractContextManager[None]: ...


def vendor_of(database: Database) -> str:
    """The database's vendor, refusing those whose SQL we do not speak."""
    vendor = database.vendor
    if vendor not in VENDORS:
        raise InvalidArgument(
            f"idfields coordination supports {', '.join(VENDORS)}, not {vendor!r}; keep the "
            "coordination tables in one of those (IDFIELDS['DATABASE'] names the alias)"
        )
    return vendor


def missing_table(error: BaseException) -> str | None:
    """The idfields table a database error says is missing, if that is what it says: the
    adapters turn it into :class:`~idfields.errors.TablesMissing` naming their own fix."""
    found = _MISSING_TABLE.search(str(error))
    return None if found is None else next(name for name in found.groups() if name)


# The transaction's commit waits for its WAL to reach the disk (and a synchronous standby,
# where one is configured) whatever the server or role defaults to; a stricter default
# (remote_apply) is kept.
_DURABLE_COMMIT = (
    "SELECT pg_catalog.set_config('synchronous_commit', 'on', true) "
    "WHERE pg_catalog.current_setting('synchronous_commit') IN ('off', 'local', 'remote_write')"
)


def commit_durably(database: Database) -> None:
    """Inside ``atomic()``: on PostgreSQL, make the transaction's COMMIT durable before it
    returns. A lease, counter or launch that the client saw committed and the server then
    lost in a crash (``synchronous_commit = off``) would be handed out again."""
    if database.vendor == "postgresql":
        database.execute(_DURABLE_COMMIT)


@contextmanager
def durable(database: Database) -> Iterator[None]:
    """One transaction (``atomic()``) whose COMMIT is durable when it returns."""
    with database.atomic():
        commit_durably(database)
        yield


def insert_if_absent(
    database: Database, table: str, columns: Sequence[str], values: Sequence[object]
) -> bool:
    """Insert a row unless its key exists; True when this call inserted it.

    ``table`` and ``columns`` are our own constant names, never user input.
    """
    names = ", ".join(columns)
    marks = ", ".join(["%s"] * len(columns))
    if vendor_of(database) == "mysql":
        sql = f"INSERT IGNORE INTO {table} ({names}) VALUES ({marks})"  # noqa: S608
    else:
        sql = f"INSERT INTO {table} ({names}) VALUES ({marks}) ON CONFLICT DO NOTHING"  # noqa: S608
    return database.execute(sql, values).rowcount == 1


def text(value: object) -> str:
    """A text column as text: a driver on an SQL_ASCII database returns bytes."""
    return value.decode() if isinstance(value, bytes) else str(value)


def check_length(what: str, value: str, limit: int) -> str:
    """Refuse strings the schema's VARCHAR columns would truncate (MySQL might do it silently)."""
    if len(value) > limit:
        raise InvalidArgument(
            f"{what} {value[:40]!r}... is {len(value)} characters; keep it <= {limit}"
        )
    return value
