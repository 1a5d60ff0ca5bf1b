"""The online path for large Postgres tables: GitLab's integer-to-bigint shape, step by step.

Each step is short or lock-light and runs on its own, with the application live:

1. ``prepare``: add ``<col>_convert_to_bigint`` (bigint, NOT NULL DEFAULT 0 where the column is
   NOT NULL: no rewrite since PG 11) to the key table and every referencing table, and a trigger
   that copies the old column into it on every INSERT and UPDATE.
2. ``backfill``: UPDATE in batches of heap pages (ctid ranges, a TID range scan since PG 14), each
   batch its own short transaction. Rows written meanwhile are kept in sync by the trigger.
3. ``verify``: count rows still out of sync (must be 0) without an exclusive lock.
4. ``index``: the unique index on the new key column and a copy of every index on an old column,
   all CONCURRENTLY (outside a transaction; a failed build is dropped and retried).
5. ``foreign_keys``: each referencing column's constraint, NOT VALID, then VALIDATE (which takes
   only SHARE UPDATE EXCLUSIVE while it scans).
6. ``swap``: one short transaction under lock_timeout: drop the triggers and the old constraints,
   keep the sequence, drop the old columns, rename the new ones into place,
   ``ADD PRIMARY KEY USING INDEX``, re-point the constraints, set the new default.

Every step but the swap is idempotent (a failed or interrupted run is simply run again), and
:func:`run_step` runs any of them through an :class:`Executor`, so ``run_online``, the Django and
the Alembic operations share one runner. :func:`remove` undoes ``prepare`` (and all that was built
on the new columns). The way back after the swap is the in-place backwards plan (the columns stay
bigint). New columns end up last in the column order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from idfields.errors import ConversionError, InvalidArgument
from idfields.migrations.convert import postgres
from idfields.migrations.convert.model import Index, KeyInfo, Reference, Statement, Target
from idfields.migrations.convert.quoting import dollar_quoted, ident, literal, qualified

# Implementation of the planner: nothing here is API.
__all__: list[str] = []

_ALL = "ACCESS EXCLUSIVE"
SUFFIX = "convert_to_bigint"
STEPS = ("prepare", "backfill", "verify", "index", "foreign_keys", "swap")


@dataclass(frozen=True)
class Column:
    """One column moving to bigint: the key or a referencing column."""

    schema: str | None
    table: str
    name: str
    nullable: bool

    @property
    def table_sql(self) -> str:
        return qualified("postgresql", self.schema, self.table)

    @property
    def new(self) -> str:
        return postgres.short_name(self.name, suffix=SUFFIX)


@dataclass(frozen=True)
class Step:
    """Statements run together: in one transaction, or (``transaction=False``) one by one."""

    name: str
    statements: tuple[Statement, ...]
    transaction: bool = True


def columns(key: KeyInfo) -> list[Column]:
    """The key first, then each referencing column."""
    found = [Column(key.schema, key.table, key.column, False)]
    found += [Column(ref.schema, ref.table, ref.column, ref.nullable) for ref in key.references]
    return found


def _by_table(key: KeyInfo) -> dict[tuple[str | None, str], list[Column]]:
    tables: dict[tuple[str | None, str], list[Column]] = {}
    for column in columns(key):
        tables.setdefault((column.schema, column.table), []).append(column)
    return tables


def _trigger(schema: str | None, table: str) -> tuple[str, str]:
    """(function, trigger) names of a table's sync trigger."""
    name = postgres.short_name(table, suffix="idfields_sync")
    return qualified("postgresql", schema, name), ident("postgresql", name)


def prepare(key: KeyInfo, target: Target) -> Step:
    check_dialect(key)
    statements = [postgres.set_lock_timeout(target), postgres.lock(postgres.lock_order(key))]
    for (schema, table), cols in _by_table(key).items():
        table_sql = qualified("postgresql", schema, table)
        for column in cols:
            kind = "bigint" if column.nullable else "bigint NOT NULL DEFAULT 0"
            statements.append(
                Statement(
                    f"ALTER TABLE {table_sql} ADD COLUMN IF NOT EXISTS "
                    f"{ident('postgresql', column.new)} {kind}",
                    _ALL,
                    note="brief: a constant default is stored in the catalog, no rewrite",
                )
            )
        copies = " ".join(
            f"NEW.{ident('postgresql', c.new)} := NEW.{ident('postgresql', c.name)};" for c in cols
        )
        function, trigger = _trigger(schema, table)
        body = f" BEGIN {copies} RETURN NEW; END "
        statements.append(
            Statement(
                f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql "
                f"AS {dollar_quoted(body)}",
                "none",
            )
        )
        statements.append(Statement(f"DROP TRIGGER IF EXISTS {trigger} ON {table_sql}", _ALL))
        statements.append(
            Statement(
                f"CREATE TRIGGER {trigger} BEFORE INSERT OR UPDATE ON {table_sql} "
                f"FOR EACH ROW EXECUTE FUNCTION {function}()",
                "SHARE ROW EXCLUSIVE",
            )
        )
    return Step("prepare", tuple(statements))


def backfill(
    key: KeyInfo, pages: Mapping[tuple[str | None, str], int], batch_pages: int = 1000
) -> Step:
    """UPDATE batches over heap pages; ``pages`` is each table's size in pages, read just before.

    The last batch of each table is open-ended, so pages added since are covered too.
    """
    check_batch_pages(batch_pages)
    statements = []
    for (schema, table), cols in _by_table(key).items():
        sets = ", ".join(
            f"{ident('postgresql', c.new)} = {ident('postgresql', c.name)}" for c in cols
        )
        stale = " OR ".join(
            f"{ident('postgresql', c.new)} IS DISTINCT FROM {ident('postgresql', c.name)}"
            for c in cols
        )
        table_sql = qualified("postgresql", schema, table)
        update = f"UPDATE {table_sql} SET {sets} WHERE ({stale})"  # noqa: S608 (names quoted)
        total = max(pages.get((schema, table), 0), 0)
        for start in range(0, total + 1, batch_pages):
            bounds = f" AND ctid >= '({start},0)'::tid"
            if start + batch_pages <= total:
                bounds += f" AND ctid < '({start + batch_pages},0)'::tid"
            statements.append(Statement(update + bounds, "ROW EXCLUSIVE", note="one batch"))
    return Step("backfill", tuple(statements), transaction=False)


def check_batch_pages(batch_pages: int) -> None:
    if not isinstance(batch_pages, int) or batch_pages < 1:
        raise InvalidArgument(
            f"batch_pages must be a whole number of pages >= 1, got {batch_pages!r}"
        )


def verify(key: KeyInfo) -> Step:
    """Rows whose copy differs: the swap must not start unless every count is 0."""
    statements = []
    for column in columns(key):
        old, new = ident("postgresql", column.name), ident("postgresql", column.new)
        statements.append(
            Statement(
                f"SELECT count(*) FROM {column.table_sql} WHERE {new} IS DISTINCT FROM {old}",  # noqa: S608
                "ACCESS SHARE",
                note="must be 0",
            )
        )
    return Step("verify", tuple(statements), transaction=False)


def _new_index_name(name: str) -> str:
    return postgres.short_name(name, suffix=SUFFIX)


def _key_index(key: KeyInfo) -> str:
    return postgres.short_name(key.table, key.column, suffix=f"{SUFFIX}_pkey")


def _copied_indexes(key: KeyInfo) -> list[tuple[Column, Index, tuple[str, ...]]]:
    """Every index on an old column but the key's primary key, once, with its table's first
    converted column and its columns as they are named before the swap."""
    found = []
    for (_, table), cols in _by_table(key).items():
        renames = {column.name: column.new for column in cols}
        for index in key.indexes.get(table, ()):
            if index.name != key.primary_key or table != key.table:
                renamed = tuple(renames.get(name, name) for name in index.columns)
                found.append((cols[0], index, renamed))
    return found


def unbuild(key: KeyInfo, target: Target) -> Step:
    """Drop the new foreign keys of an earlier run: they depend on the index a rerun rebuilds."""
    statements = [postgres.set_lock_timeout(target)]
    for ref in key.references:
        statements.append(
            Statement(
                f"ALTER TABLE {qualified('postgresql', ref.schema, ref.table)} DROP CONSTRAINT "
                f"IF EXISTS {ident('postgresql', _new_constraint(ref))}",
                _ALL,
                note="brief; a rerun starts over",
            )
        )
    return Step("index", tuple(statements))


def index(key: KeyInfo, target: Target) -> list[Step]:
    """The unique index on the new key and the index copies, CONCURRENTLY; a rerun rebuilds them
    (a build that failed leaves an invalid index, dropped here first)."""
    key_column = columns(key)[0]
    built: list[tuple[Column, str, bool, tuple[str, ...]]] = [
        (key_column, _key_index(key), True, (key_column.new,))
    ]
    for column, old, renamed in _copied_indexes(key):
        built.append((column, _new_index_name(old.name), old.unique, renamed))
    statements = []
    for column, name, unique, cols in built:
        table_sql = column.table_sql
        schema_name = qualified("postgresql", column.schema, name)
        statements.append(
            Statement(f"DROP INDEX CONCURRENTLY IF EXISTS {schema_name}", "none", transaction=False)
        )
        listed = ", ".join(ident("postgresql", c) for c in cols)
        statements.append(
            Statement(
                f"CREATE {'UNIQUE ' if unique else ''}INDEX CONCURRENTLY "
                f"{ident('postgresql', name)} ON {table_sql} ({listed})",
                "SHARE UPDATE EXCLUSIVE",
                note="writes continue while it builds",
                transaction=False,
            )
        )
    return [unbuild(key, target), Step("index", tuple(statements), transaction=False)]


def _new_constraint(ref: Reference) -> str:
    return postgres.short_name(ref.constraint, suffix=SUFFIX)


def foreign_keys(key: KeyInfo, target: Target) -> list[Step]:
    """ADD ... NOT VALID (brief lock, one transaction each), then VALIDATE (no write lock)."""
    key_column = columns(key)[0]
    added, validated = [], []
    for ref in key.references:
        table = qualified("postgresql", ref.schema, ref.table)
        name = ident("postgresql", _new_constraint(ref))
        new = ident("postgresql", postgres.short_name(ref.column, suffix=SUFFIX))
        added.append(
            Statement(
                f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY ({new}) REFERENCES "
                f"{key_column.table_sql} ({ident('postgresql', key_column.new)})"
                f"{' ' + ref.actions if ref.actions else ''} NOT VALID",
                "SHARE ROW EXCLUSIVE",
                note="checks new rows only",
            )
        )
        validated.append(
            Statement(
                f"ALTER TABLE {table} VALIDATE CONSTRAINT {name}",
                "SHARE UPDATE EXCLUSIVE",
                note="scans existing rows; writes continue",
            )
        )
    return [
        Step("foreign_keys", (postgres.set_lock_timeout(target), *added)),
        Step("foreign_keys", tuple(validated), transaction=False),
    ]


def swap(key: KeyInfo, target: Target) -> Step:
    """The one locked transaction that puts the new columns in place."""
    check_dialect(key)
    key_column = columns(key)[0]
    table = key_column.table_sql
    plan = [
        postgres.set_lock_timeout(target),
        postgres.lock(postgres.lock_order(key)),
        postgres.max_id_guard(key, target, column=key_column.new),
    ]
    for schema, name in _by_table(key):
        function, trigger = _trigger(schema, name)
        plan.append(
            Statement(f"DROP TRIGGER {trigger} ON {qualified('postgresql', schema, name)}", _ALL)
        )
        plan.append(Statement(f"DROP FUNCTION {function}()", "none"))
    for ref in key.references:
        plan.append(
            Statement(
                f"ALTER TABLE {qualified('postgresql', ref.schema, ref.table)} "
                f"DROP CONSTRAINT {ident('postgresql', ref.constraint)}",
                _ALL,
            )
        )
    new_key = ident("postgresql", key_column.new)
    if key.kind == "serial":
        plan.append(
            Statement(
                f"ALTER TABLE {table} ALTER COLUMN {ident('postgresql', key.column)} DROP DEFAULT",
                _ALL,
            )
        )
        plan.append(
            Statement(
                f"ALTER SEQUENCE {postgres.sequence_name(key)} AS bigint "
                f"OWNED BY {table}.{new_key}",
                "none",
                note="kept for the way back",
            )
        )
    elif key.kind == "identity":
        plan += postgres.keep_identity_sequence(key, owner_column=key_column.new)
    for column in columns(key):
        plan += _put_in_place(column)
    primary = key.primary_key or postgres.short_name(key.table, suffix="pkey")
    plan.append(
        Statement(
            f"ALTER TABLE {table} ADD CONSTRAINT {ident('postgresql', primary)} "
            f"PRIMARY KEY USING INDEX {ident('postgresql', _key_index(key))}",
            _ALL,
            note="the index exists: no scan",
        )
    )
    for column, old, _ in _copied_indexes(key):
        renamed = ident("postgresql", _new_index_name(old.name))
        qualified_renamed = qualified("postgresql", column.schema, _new_index_name(old.name))
        if old.constraint or old.primary:
            kind = "PRIMARY KEY" if old.primary else "UNIQUE"
            plan.append(
                Statement(
                    f"ALTER TABLE {column.table_sql} ADD CONSTRAINT {ident('postgresql', old.name)}"
                    f" {kind} USING INDEX {renamed}",
                    _ALL,
                    note="the index exists: no scan",
                )
            )
        else:
            plan.append(
                Statement(
                    f"ALTER INDEX {qualified_renamed} RENAME TO {ident('postgresql', old.name)}",
                    _ALL,
                )
            )
    for ref in key.references:
        plan.append(
            Statement(
                f"ALTER TABLE {qualified('postgresql', ref.schema, ref.table)} RENAME CONSTRAINT "
                f"{ident('postgresql', _new_constraint(ref))} "
                f"TO {ident('postgresql', ref.constraint)}",
                _ALL,
            )
        )
    if target.generation == "db":
        plan.append(
            Statement(
                f"ALTER TABLE {table} ALTER COLUMN {ident('postgresql', key.column)} "
                f"SET DEFAULT {target.db_default}",
                _ALL,
            )
        )
    return Step("swap", tuple(plan))


def _put_in_place(column: Column) -> list[Statement]:
    old, new = ident("postgresql", column.name), ident("postgresql", column.new)
    alter = f"ALTER TABLE {column.table_sql}"
    statements = [
        Statement(f"{alter} DROP COLUMN {old}", _ALL, note="catalog only, no rewrite"),
        Statement(f"{alter} RENAME COLUMN {new} TO {old}", _ALL),
    ]
    if not column.nullable:
        statements.append(Statement(f"{alter} ALTER COLUMN {old} DROP DEFAULT", _ALL))
    return statements


def remove(key: KeyInfo, target: Target) -> Step:
    """Undo ``prepare`` before the swap: the triggers and the new columns go (their indexes and
    constraints with them). Referencing tables first: their constraints point at the new key."""
    statements = [postgres.set_lock_timeout(target), postgres.lock(postgres.lock_order(key))]
    for (schema, table), cols in reversed(_by_table(key).items()):
        table_sql = qualified("postgresql", schema, table)
        function, trigger = _trigger(schema, table)
        statements.append(Statement(f"DROP TRIGGER IF EXISTS {trigger} ON {table_sql}", _ALL))
        statements.append(Statement(f"DROP FUNCTION IF EXISTS {function}()", "none"))
        for column in cols:
            statements.append(
                Statement(
                    f"ALTER TABLE {table_sql} DROP COLUMN IF EXISTS "
                    f"{ident('postgresql', column.new)}",
                    _ALL,
                    note="catalog only, no rewrite",
                )
            )
    return Step("remove", tuple(statements))


def check_dialect(key: KeyInfo) -> None:
    """The online path is Postgres only, and carries over plain btree indexes, PRIMARY KEY,
    UNIQUE and FOREIGN KEY constraints only: refuse before the first step, naming the rest."""
    if key.dialect != "postgresql":
        raise InvalidArgument(
            f"the online path is for PostgreSQL, not {key.dialect}: on MariaDB/MySQL convert "
            "in place (ConvertToKSortedId / op.convert_to_ksorted_id), or run that ALTER "
            "through an online schema-change tool (gh-ost, pt-online-schema-change)"
        )
    if key.also:
        names = ", ".join(f"{column.table}.{column.column}" for column in key.also)
        raise InvalidArgument(
            f"{names} must hold the new IDs but no foreign key ties them to the key: widen them "
            "to bigint before the online path (WidenObjectId in Django, or op.alter_column)"
        )
    if key.online_blockers:
        raise InvalidArgument(
            f"the online path cannot carry over {'; '.join(key.online_blockers)}: dropping the "
            "old column would drop it. Convert in place (ConvertToKSortedId / "
            "op.convert_to_ksorted_id), or drop it first and re-create it after the swap"
        )


def pages_sql(column: Column) -> str:
    """The table's current size in heap pages (the backfill's batches are cut from it)."""
    return (
        f"SELECT pg_catalog.pg_relation_size({literal(column.table_sql)}::regclass) / "
        "pg_catalog.current_setting('block_size')::bigint"
    )


def table_pages(scalar: Callable[[str], int], key: KeyInfo) -> dict[tuple[str | None, str], int]:
    """Each converted table's size in pages, read through ``scalar(sql) -> int``."""
    return {(column.schema, column.table): scalar(pages_sql(column)) for column in columns(key)}


class Executor(Protocol):
    """Where steps run: a raw connection, a Django schema editor, an Alembic context."""

    def execute(self, statement: Statement) -> None: ...

    def scalar(self, statement: Statement) -> int:
        """The statement's single value (offline: print it and return 0)."""
        ...

    def transaction(self) -> AbstractContextManager[None]: ...


def run_step(executor: Executor, step: Step) -> None:
    """Run one step: ``verify`` refuses to go on if a row is out of sync, a transactional step
    runs in one transaction, any other statement by statement (autocommit)."""
    if step.name == "verify":
        stale = sum(executor.scalar(statement) for statement in step.statements)
        if stale:
            raise ConversionError(
                f"{stale} rows are out of sync after the backfill; is the sync trigger in "
                "place? Run the backfill again before the swap"
            )
    elif step.transaction:
        with executor.transaction():
            for statement in step.statements:
                executor.execute(statement)
    else:
        for statement in step.statements:
            executor.execute(statement)


def plan(
    key: KeyInfo,
    target: Target,
    pages: Mapping[tuple[str | None, str], int],
    batch_pages: int = 1000,
) -> list[Step]:
    """Every step in order, for display (``sqlmigrate``-style) or for :func:`run_step`."""
    check_dialect(key)
    return [
        prepare(key, target),
        backfill(key, pages, batch_pages),
        verify(key),
        *index(key, target),
        *foreign_keys(key, target),
        swap(key, target),
    ]
