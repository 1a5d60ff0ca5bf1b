"""The MariaDB/MySQL plan: MODIFY the key and its referencing columns to BIGINT, and back.

MySQL has no sequences to keep: AUTO_INCREMENT is an attribute of the column. Forwards drops it
(MODIFY without AUTO_INCREMENT) while widening; backwards adds it again, and InnoDB starts the
counter at max(id) + 1 when it rebuilds the table. DDL commits implicitly, so each statement is
its own transaction. InnoDB refuses to MODIFY a column in a foreign key (even with
foreign_key_checks off), so each referencing constraint is dropped first and re-added after, with
foreign_key_checks off so the re-add does not scan: every value is kept, so no check is skipped
that could fail. MODIFY restates the column: the plan keeps NULL/NOT NULL and UNSIGNED; a comment
on a referencing column is not carried over.
"""

from __future__ import annotations

import math

from idfields.migrations.convert.model import KeyInfo, Statement, Target, lock_timeout_ms
from idfields.migrations.convert.quoting import ident, qualified

_LOCK = "exclusive metadata lock (ALGORITHM=COPY)"


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


def _without_foreign_keys(key: KeyInfo, statements: list[Statement]) -> list[Statement]:
    """Drop the referencing constraints around ``statements`` and re-add them unchanged."""
    if not key.references:
        return statements
    dropped, added = [], []
    target = f"{qualified('mysql', key.schema, key.table)} ({ident('mysql', key.column)})"
    for ref in key.references:
        table = qualified("mysql", ref.schema, ref.table)
        name = ident("mysql", ref.constraint)
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
        Statement("SET SESSION foreign_key_checks = 0", "none"),
        *dropped,
        *statements,
        *added,
        Statement("SET SESSION foreign_key_checks = 1", "none"),
    ]


def forwards(key: KeyInfo, target: Target) -> list[Statement]:
    if target.generation == "db":
        raise ValueError(
            "generation='db' needs the PostgreSQL functions; on MariaDB/MySQL use generation='app'"
        )
    target.check_max_id(key)
    changes = [_modify_key(key, "", "drops AUTO_INCREMENT, widens to BIGINT")]
    for ref in key.references:
        if ref.data_type == "bigint":
            continue
        table = qualified("mysql", ref.schema, ref.table)
        changes.append(
            Statement(
                f"ALTER TABLE {table} MODIFY {ident('mysql', ref.column)} "
                f"{_bigint(ref.unsigned, ref.nullable)}",
                _LOCK,
                rewrites=True,
                note=f"{ref.data_type} -> BIGINT",
            )
        )
    start, end = _timeouts(target)
    return [start, *_without_foreign_keys(key, changes), end]


def backwards(key: KeyInfo, target: Target) -> list[Statement]:
    start, end = _timeouts(target)
    restore = _modify_key(key, "AUTO_INCREMENT", "counter restarts at max(id) + 1")
    return [start, *_without_foreign_keys(key, [restore]), end]
