"""The constraint and index catalog of a set of tables, to compare before and after a conversion.

A conversion may change column types and defaults, nothing else: every PK, UNIQUE, FOREIGN KEY,
CHECK and exclusion constraint and every index keeps its name, its definition (as the server
prints it) and its validity. Column types are left out on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

Run = Callable[..., list[tuple[Any, ...]]]
Catalog = set[tuple[str, str, str, str, str]]

_PG = """
SELECT 'constraint', c.relname, con.conname,
       pg_catalog.pg_get_constraintdef(con.oid) || ' ' || con.contype::text,
       con.convalidated::text || ' ' || con.condeferrable::text || ' ' || con.condeferred::text
FROM pg_catalog.pg_constraint con
JOIN pg_catalog.pg_class c ON c.oid = con.conrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname = ANY (%s) AND con.contype <> 'n'
UNION ALL
SELECT 'index', c.relname, i.relname, pg_catalog.pg_get_indexdef(ix.indexrelid),
       ix.indisvalid::text || ' ' || ix.indisready::text || ' ' || ix.indisprimary::text
FROM pg_catalog.pg_index ix
JOIN pg_catalog.pg_class i ON i.oid = ix.indexrelid
JOIN pg_catalog.pg_class c ON c.oid = ix.indrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname = ANY (%s)
UNION ALL
SELECT 'trigger', c.relname, t.tgname, pg_catalog.pg_get_triggerdef(t.oid), ''
FROM pg_catalog.pg_trigger t
JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname = ANY (%s) AND NOT t.tgisinternal
UNION ALL
SELECT 'column', c.relname, a.attname, CASE WHEN a.attnotnull THEN 'NOT NULL' ELSE 'NULL' END, ''
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname = ANY (%s) AND a.attnum > 0 AND NOT a.attisdropped
"""

# Plain single-table reads, joined in Python: MariaDB 10.11 crashed (signal 11) on a correlated
# subquery over information_schema inside a UNION.
_MYSQL = {
    "constraints": "SELECT TABLE_NAME, CONSTRAINT_NAME, CONSTRAINT_TYPE "
    "FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE()",
    "keys": "SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, "
    "REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE "
    "WHERE TABLE_SCHEMA = DATABASE() ORDER BY ORDINAL_POSITION",
    "rules": "SELECT TABLE_NAME, CONSTRAINT_NAME, UPDATE_RULE, DELETE_RULE "
    "FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE()",
    "indexes": "SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, INDEX_TYPE, COLUMN_NAME "
    "FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() ORDER BY SEQ_IN_INDEX",
    "columns": "SELECT TABLE_NAME, COLUMN_NAME, IS_NULLABLE FROM information_schema.COLUMNS "
    "WHERE TABLE_SCHEMA = DATABASE()",
}


def _mysql(run: Run, tables: set[str]) -> Catalog:
    rows = {name: [r for r in run(sql) if r[0] in tables] for name, sql in _MYSQL.items()}
    keys: dict[tuple[str, str], list[str]] = {}
    for table, name, column, ref_table, ref_column in rows["keys"]:
        keys.setdefault((table, name), []).append(f"{column}->{ref_table}.{ref_column}")
    rules = {(table, name): f"{update} {delete}" for table, name, update, delete in rows["rules"]}
    found = {
        ("constraint", table, name, kind, f"{keys.get((table, name))} {rules.get((table, name))}")
        for table, name, kind in rows["constraints"]
    }
    indexes: dict[tuple[str, str, str], list[str]] = {}
    for table, name, non_unique, kind, column in rows["indexes"]:
        indexes.setdefault((table, name, f"{non_unique} {kind}"), []).append(column)
    found |= {
        ("index", table, name, f"{kind} {','.join(columns)}", "")
        for (table, name, kind), columns in indexes.items()
    }
    found |= {("column", table, name, nullable, "") for table, name, nullable in rows["columns"]}
    return found


def catalog(dialect: str, run: Run, tables: Iterable[str], schema: str = "conv") -> Catalog:
    """Every constraint, index, column's nullability (and, on PostgreSQL, user trigger) of
    ``tables``."""
    names = sorted(tables)
    if dialect != "postgresql":
        return _mysql(run, set(names))
    rows = run(_PG, *[schema, names] * 4)
    return {(str(a), str(b), str(c), str(d), str(e)) for a, b, c, d, e in rows}


def diff(before: Catalog, after: Catalog) -> str:
    """A readable difference ('' when equal), for the assertion message."""
    lost = sorted(before - after)
    gained = sorted(after - before)
    lines = [f"- {row}" for row in lost] + [f"+ {row}" for row in gained]
    return "\n".join(lines)
