"""Move an AUTO_INCREMENT key (serial, bigserial, identity, AUTO_INCREMENT) to k-sorted IDs.

Pure planning: an introspected :class:`KeyInfo` and a :class:`Target` in, an ordered list of
quoted, annotated :class:`Statement` out, forwards and backwards, per dialect; plus the online
path for large Postgres tables (:mod:`.online`). The Django and Alembic operations only
introspect, plan and execute.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from idfields.errors import LockTimeout
from idfields.migrations.convert import locks, mysql, online, postgres
from idfields.migrations.convert.introspect import (
    Query,
    cursor_query,
    introspect_also,
    introspect_mysql,
    introspect_postgres,
)
from idfields.migrations.convert.model import (
    IdColumn,
    Index,
    KeyInfo,
    Reference,
    Statement,
    Target,
    check_layout,
)
from idfields.migrations.convert.online import Step
from idfields.migrations.convert.quoting import Dialect, check_dialect, literal


@dataclass(frozen=True)
class Plan:
    """Both directions of one in-place conversion."""

    forwards: tuple[Statement, ...]
    backwards: tuple[Statement, ...]


def plan(key: KeyInfo, target: Target) -> Plan:
    """Both directions for a key described before the conversion (see :func:`forwards`)."""
    return Plan(forwards(key, target), backwards(key, target))


def forwards(key: KeyInfo, target: Target) -> tuple[Statement, ...]:
    """The in-place conversion; refuses if max(id) is not below the first new ID."""
    target.check_max_id(key)
    planner = postgres if key.dialect == "postgresql" else mysql
    return tuple(planner.forwards(key, target))


def backwards(key: KeyInfo, target: Target) -> tuple[Statement, ...]:
    """The way back, for a key described before or after the conversion (introspection finds
    the kept sequence and what it restores)."""
    planner = postgres if key.dialect == "postgresql" else mysql
    return tuple(planner.backwards(key, target))


@contextmanager
def recovering(
    executor: online.Executor, key: KeyInfo | None, dialect: str | None = None
) -> Iterator[None]:
    """Run a plan's statements in the block; if one fails on MariaDB/MySQL (no transactional
    DDL), release its locks and drop the key's record unless a rerun needs it
    (:func:`mysql.recover`). PostgreSQL needs nothing: a plan's transaction rolls back whole."""
    try:
        yield
    except BaseException:
        if (key.dialect if key is not None else dialect) == "mysql":
            mysql.recover(executor, key)
        raise


def introspect(
    dialect: str,
    query: Query,
    table: str,
    column: str = "id",
    schema: str | None = None,
    also: Sequence[tuple[str | None, str, str]] = (),
    lock_timeout: str | None = None,
) -> KeyInfo:
    """Describe the key from the server's catalog; ``also`` names ``(schema, table, column)``
    that hold its IDs without a foreign key (widened with it where not bigint yet).

    ``max(id)`` waits for a lock: with ``lock_timeout`` it gives up in time, raising
    :class:`LockTimeout` (the operations set it for the whole operation instead).
    """
    if lock_timeout is not None:
        with (
            locks.named_blockers(dialect, query, table, schema, lock_timeout),
            locks.bounded(dialect, query, lock_timeout),
        ):
            return introspect(dialect, query, table, column, schema, also)
    with locks.catalog_first(dialect, query):
        if check_dialect(dialect) == "postgresql":
            key = introspect_postgres(query, table, column, schema)
        else:
            key = introspect_mysql(query, table, column, schema)
        return dataclasses.replace(key, also=introspect_also(dialect, query, also))


def widen(dialect: str, columns: Sequence[IdColumn], target: Target) -> tuple[Statement, ...]:
    """Widen columns that hold IDs to bigint, on their own (a third-party GenericForeignKey)."""
    planner = postgres if check_dialect(dialect) == "postgresql" else mysql
    return tuple(planner.widen_only(columns, target)) if columns else ()


class _RawExecutor:
    """An :class:`online.Executor` over an autocommit connection's ``execute(sql) -> rows``."""

    def __init__(self, execute: Callable[[str], list[tuple[Any, ...]]]) -> None:
        self._execute = execute

    def execute(self, statement: Statement) -> None:
        self._execute(statement.sql)

    def scalar(self, statement: Statement) -> int:
        return int(self._execute(statement.sql)[0][0])

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self._execute("BEGIN")
        try:
            yield
        except BaseException:
            self._execute("ROLLBACK")
            raise
        self._execute("COMMIT")


def run_online(
    execute: Callable[[str], list[tuple[Any, ...]]],
    key: KeyInfo,
    target: Target,
    batch_pages: int = 1000,
    after_step: Callable[[str], None] | None = None,
) -> None:
    """Run the online path over an autocommit connection (``execute`` returns the rows).

    The session's lock_timeout is ``target.lock_timeout`` throughout (a timeout raises
    :class:`~idfields.errors.LockTimeout` naming the holders; rerun when they are gone).
    Transactional steps are wrapped in BEGIN/COMMIT; the backfill reads each table's size right
    before it starts; the swap is refused unless ``verify`` finds every row in sync.
    """
    online.check_dialect(key)
    target.check_max_id(key)
    executor = _RawExecutor(execute)
    query = _inline(execute)
    timeout = target.lock_timeout
    with (
        locks.named_blockers(key.dialect, query, key.table, key.schema, timeout),
        locks.bounded(key.dialect, query, timeout),
    ):
        pages = online.table_pages(lambda sql: int(execute(sql)[0][0]), key)
        for step in online.plan(key, target, pages, batch_pages):
            online.run_step(executor, step)
            if after_step is not None:
                after_step(step.name)


def _inline(execute: Callable[[str], list[tuple[Any, ...]]]) -> Query:
    """A :data:`Query` over ``execute(sql)``: parameters become quoted literals."""

    def query(sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        values = tuple("NULL" if value is None else literal(str(value)) for value in params)
        return execute(sql % values if values else sql)

    return query


__all__ = [
    "Dialect",
    "IdColumn",
    "Index",
    "KeyInfo",
    "LockTimeout",
    "Plan",
    "Query",
    "Reference",
    "Statement",
    "Step",
    "Target",
    "backwards",
    "check_layout",
    "cursor_query",
    "forwards",
    "introspect",
    "introspect_also",
    "introspect_mysql",
    "introspect_postgres",
    "locks",
    "online",
    "plan",
    "recovering",
    "run_online",
    "widen",
]
