"""Move an AUTO_INCREMENT key (serial, bigserial, identity, AUTO_INCREMENT) to k-sorted IDs.

Pure planning: an introspected :class:`KeyInfo` and a :class:`Target` in, an ordered list of
quoted, annotated :class:`Statement` out, forwards and backwards, per dialect; plus the online
path for large Postgres tables (:mod:`.online`). The Django and Alembic operations only
introspect, plan and execute.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from idfields.migrations.convert import mysql, online, postgres
from idfields.migrations.convert.introspect import (
    Query,
    cursor_query,
    introspect_mysql,
    introspect_postgres,
)
from idfields.migrations.convert.model import (
    Index,
    KeyInfo,
    Reference,
    Statement,
    Target,
    check_layout,
)
from idfields.migrations.convert.online import Step
from idfields.migrations.convert.quoting import Dialect, check_dialect


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


def introspect(
    dialect: str, query: Query, table: str, column: str = "id", schema: str | None = None
) -> KeyInfo:
    """Describe the key from the server's catalog."""
    if check_dialect(dialect) == "postgresql":
        return introspect_postgres(query, table, column, schema)
    return introspect_mysql(query, table, column, schema)


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

    Transactional steps are wrapped in BEGIN/COMMIT; the backfill reads each table's size right
    before it starts; the swap is refused unless ``verify`` finds every row in sync.
    """
    online.check_dialect(key)
    target.check_max_id(key)
    executor = _RawExecutor(execute)
    pages = online.table_pages(lambda sql: int(execute(sql)[0][0]), key)
    for step in online.plan(key, target, pages, batch_pages):
        online.run_step(executor, step)
        if after_step is not None:
            after_step(step.name)


__all__ = [
    "Dialect",
    "Index",
    "KeyInfo",
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
    "introspect_mysql",
    "introspect_postgres",
    "online",
    "plan",
    "run_online",
]
