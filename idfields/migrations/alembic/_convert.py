"""``op.convert_to_ksorted_id`` / ``op.restore_auto_increment``: the Alembic side of a key move.

Online, the key is read from the live catalog (referencing columns, M2M tables, serial or
identity, max(id)). Offline (``alembic upgrade --sql``) nothing can be read, so the caller passes
what introspection would give as ``assume=KeyInfo(...)``; on Postgres the script then checks
max(id) itself (a DO block that aborts the transaction) and finds the identity's sequence with
``pg_get_serial_sequence``, so only the kind, the column types, the serial sequence name and the
referencing columns must be right. MySQL has no anonymous blocks: offline, the max(id) check is
the caller's (the statements are still exact). Every statement goes through
``operations.execute``, headed by a comment naming its lock and whether it rewrites the table.

The online path (PostgreSQL) as separate operations, in this order, each but the swap
idempotent: ``op.add_bigint_shadow``, ``op.backfill_bigint_shadow`` (online only),
``op.validate_shadow_constraints``, ``op.swap_to_bigint`` (``op.remove_bigint_shadow`` undoes
the first before the swap; ``op.restore_auto_increment`` undoes the swap).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

from alembic.operations import MigrateOperation, Operations
from sqlalchemy import text

from idfields.errors import InvalidArgument, UnwidenedIdColumn
from idfields.migrations import convert
from idfields.migrations.convert import locks, online
from idfields.migrations.convert.introspect import likely_id_columns
from idfields.sql.scripts import named_params, named_placeholders


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
        also: Sequence[str] = (),
    ) -> None:
        self.table = table
        self.column = column
        self.schema = schema
        self.assume = assume
        self.also = tuple(also)
        self.also_columns = [_column_of(name, schema) for name in self.also]
        self.options: dict[str, Any] = {
            "layout": layout,
            "generation": generation,
            "lock_timeout": lock_timeout,
        }
        self.target = convert.Target.of(layout, generation, lock_timeout)

    name = ""  # the op's name on Alembic's ``op``

    def to_diff_tuple(self) -> tuple[str, str | None, str, str]:
        """What ``alembic check`` reports of this operation."""
        return (self.name, self.schema, self.table, self.column)

    def _args(self) -> dict[str, Any]:
        return {"schema": self.schema, "assume": self.assume, "also": self.also, **self.options}

    def dialect(self, operations: Operations) -> str | None:
        """The conversion's dialect; None where no conversion is needed (SQLite)."""
        name = operations.get_context().dialect.name
        if name not in ("postgresql", "mysql", "mariadb"):
            return None
        return "postgresql" if name == "postgresql" else "mysql"

    def key(self, operations: Operations) -> convert.KeyInfo | None:
        """The key (None on a dialect that needs no conversion, such as SQLite)."""
        dialect = self.dialect(operations)
        if dialect is None:
            return None
        if operations.get_context().as_sql:
            if self.assume is None:
                raise InvalidArgument(
                    f"offline (--sql) conversion of {self.table}.{self.column} cannot read the "
                    "catalog: pass assume=KeyInfo(...) describing the key (kind, column types, "
                    "sequence, referencing columns), or run the migration online"
                )
            return self.assume
        query = _query(operations)
        key = convert.introspect(
            dialect, query, self.table, self.column, self.schema, also=self.also_columns
        )
        likely = likely_id_columns(query, key)
        if likely:
            warnings.warn(
                UnwidenedIdColumn(
                    f"converting {self.table}.{self.column}: {', '.join(likely)} look like "
                    "integer IDs but no foreign key ties them to a key, so they stay as they "
                    "are. If one can hold this table's IDs (a polymorphic object_id), pass "
                    "also=['table.column', ...] to widen it with the key"
                ),
                stacklevel=2,
            )
        return key

    @contextmanager
    def bounded(self, operations: Operations, savepoint: bool = True) -> Iterator[None]:
        """The lock timeout in force before the first statement (introspection included), and a
        timeout naming who holds the lock. Inside the migration's transaction on PostgreSQL the work
        runs in a savepoint, so that the holders can still be read after a timeout aborted it.
        MariaDB/MySQL needs none (an error leaves its transaction usable) and could keep none:
        each DDL statement commits the transaction Alembic began, and its savepoints with it.
        Offline: the plans' own ``SET LOCAL`` statements bound the script."""
        dialect = self.dialect(operations)
        if dialect is None or operations.get_context().as_sql:
            yield
            return
        query, timeout = _query(operations), self.options["lock_timeout"]
        bind = operations.get_bind()
        transactional = dialect == "postgresql" and bind.in_transaction()
        nested = bind.begin_nested() if savepoint and transactional else nullcontext()
        with (
            locks.named_blockers(dialect, query, self.table, self.schema, timeout),
            locks.bounded(dialect, query, timeout),
            nested,
        ):
            yield


def _column_of(name: str, schema: str | None) -> tuple[str | None, str, str]:
    """``"table.column"`` or ``"schema.table.column"`` as ``(schema, table, column)``."""
    parts = name.split(".")
    if len(parts) == 2:
        return schema, parts[0], parts[1]
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    raise InvalidArgument(f"also={name!r}: write 'table.column' or 'schema.table.column'")


def _query(operations: Operations) -> convert.Query:
    """The planner's queries (``%s`` placeholders) as bound ``text()``: any driver's paramstyle."""
    bind = operations.get_bind()

    def query(sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        result = bind.execute(text(named_placeholders(sql)), named_params(params))
        return [tuple(row) for row in result.fetchall()] if result.returns_rows else []

    return query


@Operations.register_operation("convert_to_ksorted_id")
class ConvertToKSortedIdOp(_KeyOp):
    """Convert an AUTO_INCREMENT key to k-sorted IDs; the reverse restores AUTO_INCREMENT."""

    name = "convert_to_ksorted_id"

    @classmethod
    def convert_to_ksorted_id(
        cls, operations: Operations, table: str, column: str = "id", **options: Any
    ) -> None:
        """Keep every row's ID, widen the key and its referencing columns, drop AUTO_INCREMENT.

        Options: ``layout`` ("snowflake"), ``generation`` ("app" | "db"), ``lock_timeout``
        ("5s"), ``schema``, ``assume`` (a KeyInfo, required offline), ``also`` (columns
        ``"table.column"`` that hold the IDs without a foreign key, widened too; online, integer
        ``*_id`` columns that no foreign key covers are named in an UnwidenedIdColumn warning).
        """
        operations.invoke(cls(table, column, **options))

    def reverse(self) -> RestoreAutoIncrementOp:
        return RestoreAutoIncrementOp(self.table, self.column, **self._args())


@Operations.register_operation("restore_auto_increment")
class RestoreAutoIncrementOp(_KeyOp):
    """The way back: serial/identity/AUTO_INCREMENT again, its sequence past max(id)."""

    name = "restore_auto_increment"

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
    with operation.bounded(operations):
        key = operation.key(operations)
        if key is not None:
            with convert.recovering(_AlembicExecutor(operations, autocommit=False), key):
                _run(operations, convert.forwards(key, operation.target))


@Operations.implementation_for(RestoreAutoIncrementOp)
def _backwards(operations: Operations, operation: RestoreAutoIncrementOp) -> None:
    with operation.bounded(operations):
        key = operation.key(operations)
        if key is not None:
            with convert.recovering(_AlembicExecutor(operations, autocommit=False), key):
                _run(operations, convert.backwards(key, operation.target))


class _AlembicExecutor:
    """An online-path executor over Alembic: statements go through ``operations.execute``.

    Inside an autocommit block a transactional step is wrapped in BEGIN/COMMIT itself; outside
    one the migration's own transaction holds it.
    """

    def __init__(self, operations: Operations, autocommit: bool) -> None:
        self.operations = operations
        self.autocommit = autocommit
        self.offline = operations.get_context().as_sql

    def execute(self, statement: convert.Statement) -> None:
        _run(self.operations, [statement])

    def scalar(self, statement: convert.Statement) -> int:
        if self.offline:
            self.execute(statement)
            return 0
        return int(self.operations.get_bind().exec_driver_sql(statement.sql).scalar_one())

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if not self.autocommit:
            yield
            return
        self.operations.execute("BEGIN")
        try:
            yield
        except BaseException:
            if not self.offline:
                self.operations.execute("ROLLBACK")
            raise
        self.operations.execute("COMMIT")


class _OnlineOp(_KeyOp):
    """One step of the online path (:mod:`idfields.migrations.convert.online`), PostgreSQL only.

    ``autocommit`` steps run in Alembic's ``autocommit_block`` (the migration's transaction is
    committed first): batches commit one by one, indexes build CONCURRENTLY.
    """

    autocommit = False

    def steps(
        self, key: convert.KeyInfo, pages: dict[tuple[str | None, str], int]
    ) -> list[online.Step]:
        raise NotImplementedError

    def pages(
        self, operations: Operations, key: convert.KeyInfo
    ) -> dict[tuple[str | None, str], int]:
        return {}

    def run(self, operations: Operations) -> None:
        autocommit = (
            operations.get_context().autocommit_block() if self.autocommit else nullcontext()
        )
        with autocommit, self.bounded(operations, savepoint=not self.autocommit):
            key = self.key(operations)
            if key is None:
                return
            online.check_dialect(key)
            executor = _AlembicExecutor(operations, autocommit=self.autocommit)
            for step in self.steps(key, self.pages(operations, key)):
                online.run_step(executor, step)


def _register(name: str, doc: str) -> Any:
    """Register an online step as ``op.<name>(table, column="id", **options)``."""

    def decorate(cls: type[_OnlineOp]) -> type[_OnlineOp]:
        def invoke(
            cls: type[_OnlineOp],
            /,
            operations: Operations,
            table: str,
            column: str = "id",
            **options: Any,
        ) -> None:
            operations.invoke(cls(table, column, **options))

        invoke.__doc__ = doc
        invoke.__name__ = invoke.__qualname__ = name  # Alembic's proxy calls it by this name
        setattr(cls, name, classmethod(invoke))
        Operations.register_operation(name)(cls)
        Operations.implementation_for(cls)(lambda operations, operation: operation.run(operations))
        return cls

    return decorate


@_register("add_bigint_shadow", "Add synced bigint copies of the key and its references.")
class AddBigintShadowOp(_OnlineOp):
    """ACCESS EXCLUSIVE, briefly: new columns (a catalog change) and their sync triggers."""

    def steps(
        self, key: convert.KeyInfo, pages: dict[tuple[str | None, str], int]
    ) -> list[online.Step]:
        return [online.prepare(key, self.target)]

    def reverse(self) -> RemoveBigintShadowOp:
        return RemoveBigintShadowOp(self.table, self.column, **self._args())


@_register("remove_bigint_shadow", "Drop the bigint copies, their triggers and constraints.")
class RemoveBigintShadowOp(_OnlineOp):
    """The way back from ``add_bigint_shadow`` (before the swap)."""

    def steps(
        self, key: convert.KeyInfo, pages: dict[tuple[str | None, str], int]
    ) -> list[online.Step]:
        return [online.remove(key, self.target)]

    def reverse(self) -> AddBigintShadowOp:
        return AddBigintShadowOp(self.table, self.column, **self._args())


@_register(
    "backfill_bigint_shadow",
    "Copy the key into the bigint copies, batch_pages heap pages per transaction (option "
    "batch_pages, default 1000), then check that no row is out of sync.",
)
class BackfillBigintShadowOp(_OnlineOp):
    """ROW EXCLUSIVE per batch; needs a live connection (batches are cut from the table size)."""

    autocommit = True

    def __init__(self, table: str, column: str = "id", batch_pages: int = 1000, **options: Any):
        super().__init__(table, column, **options)
        online.check_batch_pages(batch_pages)
        self.batch_pages = batch_pages

    def pages(
        self, operations: Operations, key: convert.KeyInfo
    ) -> dict[tuple[str | None, str], int]:
        if operations.get_context().as_sql:
            raise InvalidArgument(
                f"offline (--sql) backfill of {self.table}: the batches are cut from the "
                "table's current size, which only a live connection can read; run this "
                "migration online"
            )
        bind = operations.get_bind()
        return online.table_pages(lambda sql: int(bind.exec_driver_sql(sql).scalar_one()), key)

    def steps(
        self, key: convert.KeyInfo, pages: dict[tuple[str | None, str], int]
    ) -> list[online.Step]:
        return [online.backfill(key, pages, self.batch_pages), online.verify(key)]


@_register(
    "validate_shadow_constraints",
    "Build the unique index and index copies CONCURRENTLY, add the foreign keys NOT VALID, "
    "then VALIDATE them.",
)
class ValidateShadowConstraintsOp(_OnlineOp):
    """SHARE UPDATE EXCLUSIVE (writes go on); the NOT VALID add is a brief SHARE ROW EXCLUSIVE."""

    autocommit = True

    def steps(
        self, key: convert.KeyInfo, pages: dict[tuple[str | None, str], int]
    ) -> list[online.Step]:
        return [*online.index(key, self.target), *online.foreign_keys(key, self.target)]


@_register(
    "swap_to_bigint",
    "Put the bigint copies in place in one short ACCESS EXCLUSIVE transaction (options as "
    "convert_to_ksorted_id); the reverse is restore_auto_increment.",
)
class SwapToBigintOp(_OnlineOp):
    """With generation="app" the key has no default after it: deploy code that supplies IDs."""

    def steps(
        self, key: convert.KeyInfo, pages: dict[tuple[str | None, str], int]
    ) -> list[online.Step]:
        self.target.check_max_id(key)
        return [online.swap(key, self.target)]

    def reverse(self) -> RestoreAutoIncrementOp:
        return RestoreAutoIncrementOp(self.table, self.column, **self._args())
