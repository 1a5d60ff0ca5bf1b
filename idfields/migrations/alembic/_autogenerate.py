"""Autogenerate for a model switched to ``id_column``: ``op.convert_to_ksorted_id``, not ALTERs.

Alembic compares column types only, so a key moved from an AUTO_INCREMENT integer to
``id_column`` comes out as ``alter_column``s: they fail on SQLite (no ALTER COLUMN) and on
MariaDB (a column in a foreign key cannot change), and on PostgreSQL they keep the serial's
``nextval`` default. :func:`process_revision_directives`, Alembic's documented hook, rewrites
the revision instead:

- an ID key whose table exists with an AUTO_INCREMENT, serial or identity key (or a column
  narrower than BIGINT) gets ``op.convert_to_ksorted_id(...)`` (its downgrade
  ``op.restore_auto_increment(...)``), which widens the key and every column referencing it;
- the type-only ``alter_column``s of those columns go, and so do they on SQLite, whose INTEGER
  is already 64 bits (no conversion there: ``alembic check`` is clean on it too).

In ``env.py``: ``context.configure(..., process_revision_directives=process_revision_directives)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from alembic.autogenerate import renderers
from alembic.autogenerate.api import AutogenContext
from alembic.operations import ops
from alembic.runtime.migration import MigrationContext

from idfields.migrations.alembic._convert import (
    ConvertToKSortedIdOp,
    RestoreAutoIncrementOp,
    _KeyOp,
)
from idfields.sqlalchemy_ext._checks import INFO_KEY

_IMPORT = "import idfields.migrations.alembic  # noqa: F401  (registers op.convert_to_ksorted_id)"


def process_revision_directives(
    context: MigrationContext, revision: object, directives: list[ops.MigrationScript]
) -> None:
    """Alembic's ``process_revision_directives`` hook (chain it first if you have your own)."""
    metadata = context.opts.get("target_metadata")
    if metadata is None:
        return
    for script in directives:
        for upgrade, downgrade in zip(
            script.upgrade_ops_list, script.downgrade_ops_list, strict=True
        ):
            if _rewrite(context, list(_as_list(metadata)), upgrade):
                downgrade.ops[:] = upgrade.reverse().ops


def _as_list(
    metadata: sa.MetaData | list[sa.MetaData] | tuple[sa.MetaData, ...],
) -> Iterator[sa.MetaData]:
    yield from (metadata,) if isinstance(metadata, sa.MetaData) else metadata


def _keys(metadatas: list[sa.MetaData]) -> Iterator[sa.Column[Any]]:
    """Every ID column that is its table's primary key."""
    for metadata in metadatas:
        for table in metadata.tables.values():
            for column in table.primary_key.columns:
                if INFO_KEY in column.info and not column.foreign_keys:
                    yield column


def _holders(metadatas: list[sa.MetaData], key: sa.Column[Any]) -> set[tuple[str | None, str, str]]:
    """The key and every column of the metadata whose foreign key points at it."""
    found = {(key.table.schema, key.table.name, key.name)}
    for metadata in metadatas:
        for table in metadata.tables.values():
            for column in table.columns:
                if any(fk.references(key.table) and fk.column is key for fk in column.foreign_keys):
                    found.add((table.schema, table.name, column.name))
    return found


def _needs_conversion(context: MigrationContext, key: sa.Column[Any]) -> bool | None:
    """Whether the live key is still AUTO_INCREMENT or narrow; None when its table is new."""
    inspector = sa.inspect(context.bind, raiseerr=True)
    table = key.table
    if not inspector.has_table(table.name, schema=table.schema):
        return None
    for column in inspector.get_columns(table.name, schema=table.schema):
        if column["name"] == key.name:
            # Reflection says autoincrement=True for serial, identity and AUTO_INCREMENT alike.
            counter = column.get("autoincrement") is True
            return counter or not isinstance(column["type"], sa.BigInteger)
    return None


def _rewrite(
    context: MigrationContext, metadatas: list[sa.MetaData], upgrade: ops.UpgradeOps
) -> bool:
    """Convert the keys that need it and drop the type changes they make; True if it changed."""
    sqlite = context.dialect.name == "sqlite"
    widened: set[tuple[str | None, str, str]] = set()
    conversions = []
    for key in _keys(metadatas):
        needed = False if sqlite else _needs_conversion(context, key)
        if needed is None or not (needed or sqlite):
            continue
        widened |= _holders(metadatas, key)
        if needed:
            generation = "db" if key.server_default is not None else "app"
            options: dict[str, Any] = {"layout": key.info[INFO_KEY], "generation": generation}
            conversions.append(
                ConvertToKSortedIdOp(key.table.name, key.name, schema=key.table.schema, **options)
            )
    dropped = _drop_widenings(upgrade, widened)
    upgrade.ops.extend(conversions)
    return bool(conversions or dropped)


def _drop_widenings(upgrade: ops.UpgradeOps, widened: set[tuple[str | None, str, str]]) -> bool:
    """Remove the integer-to-BIGINT ``alter_column``s of ``widened`` columns (and emptied
    table entries); True if any went."""
    dropped = False
    for entry in list(upgrade.ops):
        if not isinstance(entry, ops.ModifyTableOps):
            continue
        for change in list(entry.ops):
            if (
                isinstance(change, ops.AlterColumnOp)
                and (entry.schema, entry.table_name, change.column_name) in widened
                and _widening_only(change)
            ):
                entry.ops.remove(change)
                dropped = True
        if not entry.ops:
            upgrade.ops.remove(entry)
    return dropped


def _widening_only(change: ops.AlterColumnOp) -> bool:
    return (
        isinstance(change.modify_type, sa.BigInteger)
        and isinstance(change.existing_type, sa.Integer)
        and change.modify_nullable is None
        and change.modify_server_default is False
        and change.modify_name is None
        and change.modify_comment is False
    )


@renderers.dispatch_for(ConvertToKSortedIdOp)
@renderers.dispatch_for(RestoreAutoIncrementOp)
def _render(context: AutogenContext, operation: _KeyOp) -> str:
    context.imports.add(_IMPORT)
    args = [repr(operation.table)]
    if operation.column != "id":
        args.append(repr(operation.column))
    defaults = {"layout": "snowflake", "generation": "app"}
    for option, value in operation.options.items():
        if option in defaults and value != defaults[option]:
            args.append(f"{option}={value!r}")
    if operation.schema is not None:
        args.append(f"schema={operation.schema!r}")
    return f"op.{operation.name}({', '.join(args)})"
