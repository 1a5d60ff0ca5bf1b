"""The MariaDB/MySQL plan: MODIFY the key and its referencing columns to BIGINT, and back.

MySQL has no sequences to keep: AUTO_INCREMENT is an attribute of the column. Forwards drops it
(MODIFY without AUTO_INCREMENT) while widening; backwards adds it again, and InnoDB starts the
counter at max(id) + 1 when it rebuilds the table. MODIFY restates the column: the plan keeps
NULL/NOT NULL and UNSIGNED; a comment on a referencing column is not carried over.

DDL commits statement by statement, so the plan is built to be either finished or undone:

- InnoDB refuses to MODIFY a column in a foreign key (even with foreign_key_checks off), so the
  referencing constraints are dropped and re-added (foreign_key_checks off: every value is kept,
  so no check is skipped that could fail). Before any is dropped, each is written to a record
  table ``<table>_<column>_idfields_fks``; introspection reads it, so a rerun after any failure
  re-adds them all and converges. The record goes when the constraints are back.
- Every table is locked (``LOCK TABLES ... WRITE``, bounded by ``lock_wait_timeout``) before the
  first change: a session holding a metadata lock makes the plan fail there, having changed
  nothing; :func:`recover` then releases the locks and drops the record again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from idfields.errors import InvalidArgument
from idfields.migrations.convert.model import (
    IdColumn,
    KeyInfo,
    Reference,
    Statement,
    Target,
    lock_timeout_ms,
)
from idfields.migrations.convert.online import Executor
from idfields.migrations.convert.postgres import short_name
from idfields.migrations.convert.quoting import ident, qualified

# Implementation of the planner: nothing here is API.
__all__: list[str] = []

_LOCK = "exclusive metadata lock (ALGORITHM=COPY)"


def record_table(table: str, column: str) -> str:
    """The table that records the constraints a conversion of ``table.column`` drops."""
    return short_name(table, column, suffix="idfields_fks")


def text(value: str | None) -> str:
    """A string literal immune to sql_mode (backslashes, ANSI_QUOTES): hex, read as utf8mb4."""
    if value is None:
        return "NULL"
    return f"CONVERT(X'{value.encode().hex()}' USING utf8mb4)"


def _record(key: KeyInfo) -> str:
    return qualified("mysql", key.schema, record_table(key.table, key.column))


def _timeouts(target: Target) -> tuple[Statement, Statement]:
    seconds = math.ceil(lock_timeout_ms(target.lock_timeout) / 1000)
    return (
        Statement(
            f"SET SESSION lock_wait_timeout = {seconds}",
            "none",
            note="give up instead of queueing every query behind a metadata lock",
        ),
        Statement("SET SESSION lock_wait_timeout = DEFAULT", "none"),
    )


def _bigint(unsigned: bool, nullable: bool, extra: str = "") -> str:
    return (
        "BIGINT"
        + (" UNSIGNED" if unsigned else "")
        + (" NULL" if nullable else " NOT NULL")
        + (f" {extra}" if extra else "")
    )


def _modify_key(key: KeyInfo, extra: str, note: str) -> Statement:
    table = qualified("mysql", key.schema, key.table)
    column = ident("mysql", key.column)
    return Statement(
        f"ALTER TABLE {table} MODIFY {column} {_bigint(key.unsigned, False, extra)}",
        _LOCK,
        rewrites=True,
        note=note,
    )


def _lock_tables(key: KeyInfo) -> Statement:
    tables = [qualified("mysql", key.schema, key.table)]
    for ref in key.id_columns:
        name = qualified("mysql", ref.schema, ref.table)
        if name not in tables:
            tables.append(name)
    return Statement(
        "LOCK TABLES " + ", ".join(f"{name} WRITE" for name in tables),
        "shared-no-read-write metadata lock",
        note="every table first: a lock we cannot get fails here, before any change",
    )


def _recording(key: KeyInfo) -> list[Statement]:
    """Write the constraints about to be dropped where a rerun finds them (kept if present)."""
    rows = [
        "("
        + ", ".join(
            [
                text(ref.schema),
                text(ref.table),
                text(ref.column),
                text(ref.constraint),
                text(ref.data_type),
                str(int(ref.nullable)),
                str(int(ref.unsigned)),
                text(ref.actions),
            ]
        )
        + ")"
        for ref in key.references
        if not ref.recorded
    ]
    statements = [
        Statement(
            f"CREATE TABLE IF NOT EXISTS {_record(key)} (ref_schema varchar(64) NULL, "
            "ref_table varchar(64) NOT NULL, ref_column varchar(64) NOT NULL, "
            "constraint_name varchar(64) NOT NULL, data_type varchar(16) NOT NULL, "
            "nullable bool NOT NULL, unsigned_ bool NOT NULL, actions varchar(200) NOT NULL, "
            "PRIMARY KEY (ref_table, constraint_name)) ENGINE=InnoDB",
            "none",
            note="the foreign keys this conversion drops, until they are back",
        )
    ]
    if rows:
        statements.append(
            Statement(
                f"INSERT IGNORE INTO {_record(key)} VALUES {', '.join(rows)}",  # noqa: S608
                "none",
            )
        )
    return statements


def _without_foreign_keys(key: KeyInfo, statements: list[Statement]) -> list[Statement]:
    """Lock, record and drop the referencing constraints around ``statements``, re-add them."""
    if not key.references:
        return [_lock_tables(key), *statements, Statement("UNLOCK TABLES", "none")]
    dropped, added = [], []
    target = f"{qualified('mysql', key.schema, key.table)} ({ident('mysql', key.column)})"
    for ref in key.references:
        table = qualified("mysql", ref.schema, ref.table)
        name = ident("mysql", ref.constraint)
        if not ref.recorded:
            dropped.append(Statement(f"ALTER TABLE {table} DROP FOREIGN KEY {name}", _LOCK))
        added.append(
            Statement(
                f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY "
                f"({ident('mysql', ref.column)}) REFERENCES {target}"
                + (f" {ref.actions}" if ref.actions else ""),
                _LOCK,
                note="not re-checked: foreign_key_checks is off and no value changed",
            )
        )
    return [
        *_recording(key),
        _lock_tables(key),
        Statement("SET SESSION foreign_key_checks = 0", "none"),
        *dropped,
        *statements,
        *added,
        Statement("SET SESSION foreign_key_checks = 1", "none"),
        Statement("UNLOCK TABLES", "none"),
        Statement(f"DROP TABLE {_record(key)}", "none", note="every constraint is back"),
    ]


def _modify(column: Reference | IdColumn) -> Statement:
    return Statement(
        f"ALTER TABLE {qualified('mysql', column.schema, column.table)} MODIFY "
        f"{ident('mysql', column.column)} {_bigint(column.unsigned, column.nullable)}",
        _LOCK,
        rewrites=True,
        note=f"{column.data_type} -> BIGINT",
    )


def widen_only(columns: Sequence[IdColumn], target: Target) -> list[Statement]:
    """Columns that hold IDs without a foreign key to BIGINT, every table locked first."""
    tables = list(dict.fromkeys(qualified("mysql", c.schema, c.table) for c in columns))
    start, end = _timeouts(target)
    return [
        start,
        Statement(
            "LOCK TABLES " + ", ".join(f"{name} WRITE" for name in tables),
            "shared-no-read-write metadata lock",
        ),
        *(_modify(column) for column in columns),
        Statement("UNLOCK TABLES", "none"),
        end,
    ]


def forwards(key: KeyInfo, target: Target) -> list[Statement]:
    if target.generation == "db":
        raise InvalidArgument(
            "generation='db' needs the PostgreSQL functions; on MariaDB/MySQL use generation='app'"
        )
    target.check_max_id(key)
    changes = []
    if key.kind != "none" or key.data_type != "bigint":  # a rerun finds the key converted
        changes.append(_modify_key(key, "", "drops AUTO_INCREMENT, widens to BIGINT"))
    changes += [_modify(ref) for ref in key.id_columns if ref.data_type != "bigint"]
    start, end = _timeouts(target)
    return [start, *_without_foreign_keys(key, changes), end]


def backwards(key: KeyInfo, target: Target) -> list[Statement]:
    start, end = _timeouts(target)
    restore = _modify_key(key, "AUTO_INCREMENT", "counter restarts at max(id) + 1")
    return [start, *_without_foreign_keys(key, [restore]), end]


def recorded(rows: list[tuple[object, ...]]) -> list[Reference]:
    """The references a record table holds (its rows as :func:`_recording` wrote them)."""
    return [
        Reference(
            None if schema is None else str(schema),
            str(table),
            str(column),
            str(name),
            str(data_type),
            bool(nullable),
            bool(unsigned),
            str(actions),
            recorded=True,
        )
        for schema, table, column, name, data_type, nullable, unsigned, actions in rows
    ]


def recover(executor: Executor, key: KeyInfo | None) -> None:
    """After a failed plan: locks released, checks on, and the key's record dropped unless a
    constraint it holds is missing (then a rerun needs it to put that constraint back)."""
    for sql in ("UNLOCK TABLES", "SET SESSION foreign_key_checks = 1"):
        executor.execute(Statement(sql, "none"))
    if key is None:
        return
    schema = "DATABASE()" if key.schema is None else text(key.schema)
    name = text(record_table(key.table, key.column))
    exists = executor.scalar(
        Statement(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE "  # noqa: S608
            f"TABLE_SCHEMA = {schema} AND TABLE_NAME = {name}",
            "none",
        )
    )
    if not exists:
        return
    missing = executor.scalar(
        Statement(
            f"SELECT COUNT(*) FROM {_record(key)} r WHERE NOT EXISTS (SELECT 1 FROM "  # noqa: S608
            "information_schema.REFERENTIAL_CONSTRAINTS c WHERE c.CONSTRAINT_SCHEMA = "
            "COALESCE(r.ref_schema, DATABASE()) AND c.TABLE_NAME = r.ref_table "
            "AND c.CONSTRAINT_NAME = r.constraint_name)",
            "none",
        )
    )
    if not missing:
        executor.execute(Statement(f"DROP TABLE {_record(key)}", "none"))
