"""``op.convert_to_ksorted_id`` / ``op.restore_auto_increment``: the Alembic side of a key move.

Online, the key is read from the live catalog (referencing columns, M2M tables, serial or
identity, max(id)). Offline (``alembic upgrade --sql``) nothing can be read, so the caller passes
what introspection would give as ``assume=KeyInfo(...)``; on Postgres the script then checks
max(id) itself (a DO block that aborts the transaction) and finds the identity's sequence with
``pg_get_serial_sequence``, so only the kind, the column types, the serial sequence name and the
referencing columns must be right. MySQL has no anonymous blocks: offline, the max(id) check is
the caller's (the statements are still exact). Every statement goes through
``operations.execute``, headed by a comment naming its lock and whether it rewrites the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from alembic.operations import MigrateOperation, Operations
from sqlalchemy import text

from idfields.migrations import convert


class _KeyOp(MigrateOperation):
    """What both directions share: the key's address and the target."""

    def __init__(
        self,
        table: str,
        column: str = "id",
        *,
        layout: str = "snowflake",
        generation: str = "app",
        lock_timeout: str = "5s",
        schema: str | None = None,
        assume: convert.KeyInfo | None = None,
    ) -> None:
        self.table = table
        self.column = column
        self.schema = schema
        self.assume = assume
        self.options: dict[str, Any] = {
            "layout": layout,
            "generation": generation,
            "lock_timeout": lock_timeout,
        }
        self.target = convert.Target.of(layout, generation, lock_timeout)

    def _args(self) -> dict[str, Any]:
        return {"schema": self.schema, "assume": self.assume, **self.options}

    def key(self, operations: Operations) -> convert.KeyInfo | None:
        """The key (None on a dialect that needs no conversion, such as SQLite)."""
        context = operations.get_context()
        dialect = context.dialect.name
        if dialect not in ("postgresql", "mysql", "mariadb"):
            return None
        if context.as_sql:
            if self.assume is None:
                raise ValueError(
                    f"offline (--sql) conversion of {self.table}.{self.column} cannot read the "
                    "catalog: pass assume=KeyInfo(...) describing the key (kind, column types, "
                    "sequence, referencing columns), or run the migration online"
                )
            return self.assume
        bind = operations.get_bind()

        def query(sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
            result = bind.exec_driver_sql(sql, tuple(params))
            return [tuple(row) for row in result.fetchall()]

        name = "postgresql" if dialect == "postgresql" else "mysql"
        return convert.introspect(name, query, self.table, self.column, self.schema)


@Operations.register_operation("convert_to_ksorted_id")
class ConvertToKSortedIdOp(_KeyOp):
    """Convert an AUTO_INCREMENT key to k-sorted IDs; the reverse restores AUTO_INCREMENT."""

    @classmethod
    def convert_to_ksorted_id(
        cls, operations: Operations, table: str, column: str = "id", **options: Any
    ) -> None:
        """Keep every row's ID, widen the key and its referencing columns, drop AUTO_INCREMENT.

        Options: ``layout`` ("snowflake"), ``generation`` ("app" | "db"), ``lock_timeout``
        ("5s"), ``schema``, ``assume`` (a KeyInfo, required offline).
        """
        operations.invoke(cls(table, column, **options))

    def reverse(self) -> RestoreAutoIncrementOp:
        return RestoreAutoIncrementOp(self.table, self.column, **self._args())


@Operations.register_operation("restore_auto_increment")
class RestoreAutoIncrementOp(_KeyOp):
    """The way back: serial/identity/AUTO_INCREMENT again, its sequence past max(id)."""

    @classmethod
    def restore_auto_increment(
        cls, operations: Operations, table: str, column: str = "id", **options: Any
    ) -> None:
        """Undo ``convert_to_ksorted_id`` (same arguments); the columns stay bigint."""
        operations.invoke(cls(table, column, **options))

    def reverse(self) -> ConvertToKSortedIdOp:
        return ConvertToKSortedIdOp(self.table, self.column, **self._args())


def _run(operations: Operations, statements: Sequence[convert.Statement]) -> None:
    for statement in statements:
        # text() reads ":name" as a bind parameter; escape every colon (casts included).
        operations.execute(text(statement.annotated().replace(":", r"\:")))


@Operations.implementation_for(ConvertToKSortedIdOp)
def _forwards(operations: Operations, operation: ConvertToKSortedIdOp) -> None:
    key = operation.key(operations)
    if key is not None:
        _run(operations, convert.forwards(key, operation.target))


@Operations.implementation_for(RestoreAutoIncrementOp)
def _backwards(operations: Operations, operation: RestoreAutoIncrementOp) -> None:
    key = operation.key(operations)
    if key is not None:
        _run(operations, convert.backwards(key, operation.target))
