"""``op.create_idfields_tables()`` / ``op.drop_idfields_tables()``: the coordination tables.

The DDL is a frozen copy of schema version 1 (the same columns as
``idfields.sqlalchemy_ext._tables`` and the Django app's models), not an import of the live
models: a migration must replay the same way forever, whatever later versions change. The
statements go through the migration context, so ``alembic upgrade --sql`` prints them.
"""

from __future__ import annotations

from alembic.autogenerate import renderers
from alembic.autogenerate.api import AutogenContext
from alembic.operations import MigrateOperation, Operations
from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Identity,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
)
from sqlalchemy.schema import CreateTable, DropTable


def schema_v1() -> list[Table]:
    """The tables of schema version 1, on a fresh MetaData."""
    metadata = MetaData()
    return [
        Table(
            "idfields_launch",
            metadata,
            Column("id", Integer, primary_key=True, autoincrement=False),
            Column("label", String(100), nullable=False),
            Column("created_at", DateTime(timezone=True), nullable=False),
        ),
        Table(
            "idfields_node_lease",
            metadata,
            Column(
                "id", BigInteger().with_variant(Integer(), "sqlite"), Identity(), primary_key=True
            ),
            Column("layout", String(64), nullable=False),
            Column("node", Integer, nullable=False),
            Column("holder", String(255), nullable=False),
            Column("acquired_at_ms", BigInteger, nullable=False),
            Column("expires_at_ms", BigInteger, nullable=False),
            UniqueConstraint("layout", "node", name="idfields_node_lease_layout_node_uniq"),
            sqlite_autoincrement=True,
        ),
        Table(
            "idfields_counter",
            metadata,
            Column("name", String(100), primary_key=True),
            Column("value", BigInteger, nullable=False),
        ),
    ]


@Operations.register_operation("create_idfields_tables")
class CreateIdfieldsTablesOp(MigrateOperation):
    """Create idfields_launch, idfields_node_lease and idfields_counter."""

    @classmethod
    def create_idfields_tables(cls, operations: Operations) -> None:
        """Create the idfields coordination tables (launch log, node leases, counters)."""
        operations.invoke(cls())

    def reverse(self) -> DropIdfieldsTablesOp:
        return DropIdfieldsTablesOp()


@Operations.register_operation("drop_idfields_tables")
class DropIdfieldsTablesOp(MigrateOperation):
    """Drop the tables :class:`CreateIdfieldsTablesOp` made (their leases and launches too)."""

    @classmethod
    def drop_idfields_tables(cls, operations: Operations) -> None:
        """Drop the idfields coordination tables."""
        operations.invoke(cls())

    def reverse(self) -> CreateIdfieldsTablesOp:
        return CreateIdfieldsTablesOp()


def _rerunnable(operations: Operations) -> bool:
    """Whether a rerun may find the tables already made (or already gone): on MariaDB/MySQL each
    DDL statement commits, so a migration stopped after this operation left its tables while
    ``alembic_version`` still names the revision before it. Elsewhere the migration's
    transaction undoes the whole operation."""
    return not operations.get_context().impl.transactional_ddl


@Operations.implementation_for(CreateIdfieldsTablesOp)
def _create(operations: Operations, operation: CreateIdfieldsTablesOp) -> None:
    rerunnable = _rerunnable(operations)
    for table in schema_v1():
        operations.execute(CreateTable(table, if_not_exists=rerunnable))


@Operations.implementation_for(DropIdfieldsTablesOp)
def _drop(operations: Operations, operation: DropIdfieldsTablesOp) -> None:
    rerunnable = _rerunnable(operations)
    for table in reversed(schema_v1()):
        operations.execute(DropTable(table, if_exists=rerunnable))


@renderers.dispatch_for(CreateIdfieldsTablesOp)
def _render_create(context: AutogenContext, operation: CreateIdfieldsTablesOp) -> str:
    return "op.create_idfields_tables()"


@renderers.dispatch_for(DropIdfieldsTablesOp)
def _render_drop(context: AutogenContext, operation: DropIdfieldsTablesOp) -> str:
    return "op.drop_idfields_tables()"
