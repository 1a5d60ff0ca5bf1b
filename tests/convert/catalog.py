"""The constraint and index catalog of a set of tables, to compare before and after a conversion.

A conversion may change column types and defaults, nothing else: every PK, UNIQUE, FOREIGN KEY,
CHECK and exclusion constraint and every index keeps its name, its definition (as the server
prints it) and its validity. Column types are left out on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

Run = Callable[..., list[tuple[Any, ...]]]

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

_MYSQL = """
SELECT 'constraint', tc.TABLE_NAME, tc.CONSTRAINT_NAME, tc.CONSTRAINT_TYPE,
       CONCAT_WS(' ', k.REFERENCED_TABLE_NAME, k.REFERENCED_COLUMN_NAME, r.UPDATE_RULE,
                 r.DELETE_RULE,
                 (SELECT GROUP_CONCAT(k2.COLUMN_NAME ORDER BY k2.ORDINAL_POSITION)
                  FROM information_schema.KEY_COLUMN_USAGE k2
                  WHERE k2.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA
                    AND k2.TABLE_NAME = tc.TABLE_NAME
                    AND k2.CONSTRAINT_NAME = tc.CONSTRAINT_NAME))
FROM information_schema.TABLE_CONSTRAINTS tc
LEFT JOIN information_schema.KEY_COLUMN_USAGE k ON k.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA
  AND k.TABLE_NAME = tc.TABLE_NAME AND k.CONSTRAINT_NAME = tc.CONSTRAINT_NAME
  AND k.ORDINAL_POSITION = 1
LEFT JOIN information_schema.REFERENTIAL_CONSTRAINTS r
  ON r.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND r.TABLE_NAME = tc.TABLE_NAME
  AND r.CONSTRAINT_NAME = tc.CONSTRAINT_NAME
WHERE tc.TABLE_SCHEMA = DATABASE() AND FIND_IN_SET(tc.TABLE_NAME, %s)
UNION ALL
SELECT 'index', TABLE_NAME, INDEX_NAME,
       CONCAT(NON_UNIQUE, ' ', INDEX_TYPE, ' ',
              GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX)),
       ''
FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = DATABASE() AND FIND_IN_SET(TABLE_NAME, %s)
GROUP BY TABLE_NAME, INDEX_NAME, NON_UNIQUE, INDEX_TYPE
UNION ALL
SELECT 'column', TABLE_NAME, COLUMN_NAME, IS_NULLABLE, ''
FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND FIND_IN_SET(TABLE_NAME, %s)
"""

Catalog = set[tuple[str, str, str, str, str]]


def catalog(dialect: str, run: Run, tables: Iterable[str], schema: str = "conv") -> Catalog:
    """Every constraint, index, column's nullability (and, on PostgreSQL, user trigger) of
    ``tables``."""
    names = sorted(tables)
    if dialect == "postgresql":
        rows = run(_PG, *[schema, names] * 4)
    else:
        joined = ",".join(names)
        rows = run(_MYSQL, joined, joined, joined)
    return {tuple(str(value) for value in row) for row in rows}  # type: ignore[misc]


def diff(before: Catalog, after: Catalog) -> str:
    """A readable difference ('' when equal), for the assertion message."""
    lost = sorted(before - after)
    gained = sorted(after - before)
    lines = [f"- {row}" for row in lost] + [f"+ {row}" for row in gained]
    return "\n".join(lines)
