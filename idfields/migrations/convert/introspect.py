"""Read a key's description from the server's catalog, one function per dialect.

Both take a ``query(sql, params) -> rows`` callable with ``%s`` placeholders, so a psycopg or
PyMySQL cursor, a Django cursor or a SQLAlchemy connection can all serve it (see
:func:`cursor_query`). Names are passed as bound parameters, never spliced in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from idfields.errors import InvalidArgument
from idfields.migrations.convert import mysql
from idfields.migrations.convert.model import IdColumn, Index, KeyInfo, KeyKind, Reference
from idfields.migrations.convert.postgres import IDENTITY_COMMENTS, short_name
from idfields.migrations.convert.quoting import ident, qualified

# Implementation of the planner: nothing here is API.
__all__: list[str] = []

Query = Callable[[str, Sequence[object]], list[tuple[Any, ...]]]


class Cursor(Protocol):
    def execute(self, sql: str, params: Any = ..., /) -> object: ...

    def fetchall(self) -> Sequence[Sequence[Any]]: ...


def cursor_query(cursor: Cursor) -> Query:
    """A :data:`Query` over a DB-API cursor."""

    def query(sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        cursor.execute(sql, tuple(params))
        return [tuple(row) for row in cursor.fetchall()]

    return query


_PG_TYPES = {"smallint": "smallint", "integer": "integer", "bigint": "bigint"}
_PG_ACTIONS = {"r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}

_PG_COLUMN = """
SELECT c.oid, n.nspname, a.attnum, pg_catalog.format_type(a.atttypid, NULL), a.attidentity,
       (SELECT dep.refobjid::regclass::text FROM pg_catalog.pg_depend dep
         WHERE dep.classid = 'pg_catalog.pg_attrdef'::regclass AND dep.objid = d.oid
           AND dep.refclassid = 'pg_catalog.pg_class'::regclass LIMIT 1),
       (SELECT sn.nspname || chr(31) || s.relname || chr(31) || COALESCE(
                   pg_catalog.obj_description(s.oid, 'pg_class'), '')
         FROM pg_catalog.pg_depend dep
         JOIN pg_catalog.pg_class s ON s.oid = dep.objid
         JOIN pg_catalog.pg_namespace sn ON sn.oid = s.relnamespace
         WHERE dep.refobjid = c.oid AND dep.refobjsubid = a.attnum AND s.relkind = 'S'
           AND dep.classid = 'pg_catalog.pg_class'::regclass LIMIT 1),
       (SELECT s.relname FROM pg_catalog.pg_depend dep
         JOIN pg_catalog.pg_class s ON s.oid = dep.refobjid
         WHERE dep.classid = 'pg_catalog.pg_attrdef'::regclass AND dep.objid = d.oid
           AND s.relkind = 'S' LIMIT 1),
       (SELECT sn.nspname FROM pg_catalog.pg_depend dep
         JOIN pg_catalog.pg_class s ON s.oid = dep.refobjid
         JOIN pg_catalog.pg_namespace sn ON sn.oid = s.relnamespace
         WHERE dep.classid = 'pg_catalog.pg_attrdef'::regclass AND dep.objid = d.oid
           AND s.relkind = 'S' LIMIT 1),
       (SELECT conname FROM pg_catalog.pg_constraint WHERE conrelid = c.oid AND contype = 'p')
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND NOT a.attisdropped
LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE c.oid = pg_catalog.to_regclass(%s) AND a.attname = %s
"""

_PG_REFERENCES = """
SELECT rn.nspname, r.relname, a.attname, pg_catalog.format_type(a.atttypid, NULL),
       NOT a.attnotnull, con.conname, con.confupdtype, con.confdeltype, con.condeferrable,
       con.condeferred, pg_catalog.array_length(con.conkey, 1)
FROM pg_catalog.pg_constraint con
JOIN pg_catalog.pg_class r ON r.oid = con.conrelid
JOIN pg_catalog.pg_namespace rn ON rn.oid = r.relnamespace
JOIN pg_catalog.pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1]
WHERE con.contype = 'f' AND con.confrelid = %s AND %s = ANY (con.confkey)
ORDER BY rn.nspname, r.relname, con.conname
"""

# Every index of a table that uses one of the columns, as a key column, in an expression or in
# a predicate (a constraint's index depends on the constraint, an expression's on the column).
_PG_INDEXES = """
SELECT i.relname, ix.indisunique, ix.indisprimary,
       ARRAY(SELECT a.attname FROM pg_catalog.unnest(ix.indkey) WITH ORDINALITY AS k(num, pos)
             JOIN pg_catalog.pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.num
             ORDER BY k.pos),
       ix.indexprs IS NULL AND ix.indpred IS NULL AND NOT (0 = ANY (ix.indkey))
         AND am.amname = 'btree' AND ix.indnkeyatts = ix.indnatts
         AND NOT (0 <> ANY (ix.indoption::int2[])),
       con.contype, COALESCE(con.condeferrable, false)
FROM pg_catalog.pg_index ix
JOIN pg_catalog.pg_class i ON i.oid = ix.indexrelid
JOIN pg_catalog.pg_am am ON am.oid = i.relam
LEFT JOIN pg_catalog.pg_constraint con ON con.conindid = ix.indexrelid
  AND con.conrelid = ix.indrelid AND con.contype IN ('p', 'u', 'x')
WHERE ix.indrelid = pg_catalog.to_regclass(%s) AND EXISTS (
  SELECT 1 FROM pg_catalog.pg_attribute a
  WHERE a.attrelid = ix.indrelid AND a.attname = ANY (%s) AND (
    a.attnum = ANY (ix.indkey) OR EXISTS (
      SELECT 1 FROM pg_catalog.pg_depend d
      WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = ix.indexrelid
        AND d.refobjid = ix.indrelid AND d.refobjsubid = a.attnum)))
ORDER BY i.relname
"""

# CHECK constraints on the columns (DROP COLUMN would drop them silently) and foreign keys of
# other tables pointing at them (the key's own references excepted: those are re-pointed).
_PG_CONSTRAINTS = """
SELECT DISTINCT con.conname, con.contype, con.conrelid::regclass::text
FROM pg_catalog.pg_constraint con
JOIN pg_catalog.pg_attribute a ON a.attrelid = pg_catalog.to_regclass(%s)
WHERE (con.contype = 'c' AND con.conrelid = a.attrelid AND a.attname = ANY (%s)
       AND a.attnum = ANY (con.conkey))
   OR (con.contype = 'f' AND con.confrelid = a.attrelid AND a.attname = ANY (%s)
       AND a.attnum = ANY (con.confkey))
ORDER BY con.conname
"""


def _split(owned: str | None) -> tuple[str | None, str | None, str]:
    """(schema, name, comment) of the owned sequence, joined by the unit separator chr(31)."""
    if owned is None:
        return None, None, ""
    schema, name, comment = owned.split("\x1f", 2)
    return schema, name, comment


def introspect_postgres(
    query: Query, table: str, column: str = "id", schema: str | None = None
) -> KeyInfo:
    """The key ``schema.table.column`` (``schema`` None: as the search_path finds the table)."""
    rows = query(_PG_COLUMN, [qualified("postgresql", schema, table), column])
    if not rows:
        where = f"{schema}.{table}" if schema else table
        raise InvalidArgument(f"no column {column!r} in table {where!r}: check the names")
    oid, found_schema, attnum, type_name, identity, _, owned_seq = rows[0][:7]
    serial_seq, serial_schema, pk = rows[0][7:]
    kind: KeyKind = "none"
    sequence, sequence_schema = serial_seq, serial_schema
    owned_schema, owned_name, comment = _split(owned_seq)
    always = identity == "a"
    if identity in ("a", "d"):
        kind, sequence_schema, sequence = "identity", owned_schema, owned_name
    elif serial_seq is not None:
        kind = "serial"
    elif owned_name == short_name(table, column, suffix="idfields_seq"):
        # Converted from an identity: the kept sequence says how to restore it.
        kind, always = "identity", comment == IDENTITY_COMMENTS[True]
    elif owned_name is not None:
        # Converted from serial: the sequence stays owned by the column, without the default.
        kind, sequence_schema, sequence = "serial", owned_schema, owned_name
    references = []
    for row in query(_PG_REFERENCES, [oid, attnum]):
        ref_schema, ref_table, ref_column, ref_type, nullable, name = row[:6]
        on_update, on_delete, deferrable, deferred, width = row[6:]
        if width != 1:
            raise InvalidArgument(
                f"constraint {name!r} on {ref_table!r} is a multi-column foreign key including "
                f"{table}.{column}; convert it by hand, this operation handles single columns"
            )
        actions = []
        if on_delete in _PG_ACTIONS:
            actions.append(f"ON DELETE {_PG_ACTIONS[on_delete]}")
        if on_update in _PG_ACTIONS:
            actions.append(f"ON UPDATE {_PG_ACTIONS[on_update]}")
        if deferrable:
            actions.append("DEFERRABLE INITIALLY " + ("DEFERRED" if deferred else "IMMEDIATE"))
        references.append(
            Reference(
                ref_schema,
                ref_table,
                ref_column,
                name,
                _pg_type(ref_type, ref_table, ref_column),
                bool(nullable),
                actions=" ".join(actions),
            )
        )
    key = KeyInfo(
        "postgresql",
        found_schema,
        table,
        column,
        _pg_type(type_name, table, column),
        kind,
        sequence,
        sequence_schema,
        always,
        primary_key=pk,
        references=tuple(references),
    )
    table_sql = qualified("postgresql", found_schema, table)
    max_id = query(f"SELECT max({ident('postgresql', column)}) FROM {table_sql}", [])[0][0]  # noqa: S608
    indexes, blockers = _pg_online_objects(query, key)
    return dataclasses.replace(key, max_id=max_id, indexes=indexes, online_blockers=blockers)


def _pg_online_objects(
    query: Query, key: KeyInfo
) -> tuple[dict[str, tuple[Index, ...]], tuple[str, ...]]:
    """Per table, the indexes the online path rebuilds on the new columns (the key's own
    primary key aside), and what it cannot carry over: it refuses to start, naming them."""
    tables: dict[tuple[str | None, str], list[str]] = {(key.schema, key.table): [key.column]}
    for ref in key.references:
        tables.setdefault((ref.schema, ref.table), []).append(ref.column)
    indexes: dict[str, tuple[Index, ...]] = {}
    blockers: list[str] = []
    for (schema, table), names in tables.items():
        where = qualified("postgresql", schema, table)
        is_key_table = (schema, table) == (key.schema, key.table)
        found = []
        for name, unique, primary, cols, plain, contype, deferrable in query(
            _PG_INDEXES, [where, names]
        ):
            if primary and is_key_table:
                continue
            if contype == "x":
                blockers.append(f"exclusion constraint {name!r} on {table}")
            elif not plain:
                blockers.append(
                    f"index {name!r} on {table} (an expression, a predicate, INCLUDE, DESC or "
                    "a method other than btree)"
                )
            elif deferrable:
                blockers.append(f"deferrable constraint {name!r} on {table}")
            else:
                found.append(Index(name, tuple(cols), bool(unique), contype == "u", bool(primary)))
        indexes[table] = tuple(found)
        targets = [n for n in names if not (is_key_table and n == key.column)]
        for name, contype, owner in query(_PG_CONSTRAINTS, [where, names, targets]):
            what = "CHECK constraint" if contype == "c" else "foreign key"
            blockers.append(f"{what} {name!r} on {owner}")
    return indexes, tuple(blockers)


def _pg_type(type_name: str, table: str, column: str) -> str:
    try:
        return _PG_TYPES[type_name]
    except KeyError:
        raise InvalidArgument(
            f"{table}.{column} is {type_name}, not an integer: only integer keys are converted"
        ) from None


_MYSQL_TYPES = {
    "smallint": "smallint",
    "mediumint": "integer",
    "int": "integer",
    "bigint": "bigint",
}

# Fixed keywords only: nothing read from the catalog is pasted into a statement.
_MYSQL_ACTIONS = {
    "CASCADE": "CASCADE",
    "SET NULL": "SET NULL",
    "SET DEFAULT": "SET DEFAULT",
    "RESTRICT": "RESTRICT",
    "NO ACTION": "NO ACTION",
}

_MYSQL_COLUMN = """
SELECT DATA_TYPE, COLUMN_TYPE, EXTRA FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = COALESCE(%s, DATABASE()) AND TABLE_NAME = %s AND COLUMN_NAME = %s
"""

_MYSQL_TABLE = """
SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(%s, DATABASE())
  AND TABLE_NAME = %s
"""

# Three single-table reads joined here, not one information_schema join: MariaDB 10.11 was seen
# to crash (signal 11 dropping the Aria temporary table) on the join under concurrent DDL.
_MYSQL_REFERENCING_KEYS = """
SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, CONSTRAINT_NAME
FROM information_schema.KEY_COLUMN_USAGE
WHERE REFERENCED_TABLE_SCHEMA = COALESCE(%s, DATABASE()) AND REFERENCED_TABLE_NAME = %s
  AND REFERENCED_COLUMN_NAME = %s
ORDER BY TABLE_NAME, CONSTRAINT_NAME
"""

_MYSQL_REFERENCING_COLUMN = """
SELECT DATA_TYPE, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND COLUMN_NAME = %s
"""

_MYSQL_RULES = """
SELECT DELETE_RULE, UPDATE_RULE FROM information_schema.REFERENTIAL_CONSTRAINTS
WHERE CONSTRAINT_SCHEMA = %s AND TABLE_NAME = %s AND CONSTRAINT_NAME = %s
"""


def _mysql_references(
    query: Query, table: str, column: str, schema: str | None
) -> list[tuple[Any, ...]]:
    """Each foreign key column pointing at ``table.column``: its place, type and rules."""
    found = []
    for ref_schema, ref_table, ref_column, name in query(
        _MYSQL_REFERENCING_KEYS, [schema, table, column]
    ):
        [types] = query(_MYSQL_REFERENCING_COLUMN, [ref_schema, ref_table, ref_column])
        [rules] = query(_MYSQL_RULES, [ref_schema, ref_table, name])
        found.append((ref_schema, ref_table, ref_column, name, *types, *rules))
    return found


def introspect_mysql(
    query: Query, table: str, column: str = "id", schema: str | None = None
) -> KeyInfo:
    """The key ``schema.table.column`` (``schema`` None: the current database)."""
    rows = query(_MYSQL_COLUMN, [schema, table, column])
    if not rows:
        raise InvalidArgument(f"no column {column!r} in table {table!r}: check the names")
    data_type, column_type, extra = rows[0]
    current = str(query("SELECT DATABASE()", [])[0][0])
    references = []
    for row in _mysql_references(query, table, column, schema):
        ref_schema, ref_table, ref_column, name, ref_type, ref_column_type, nullable = row[:7]
        on_delete, on_update = (_MYSQL_ACTIONS[rule] for rule in row[7:])
        references.append(
            Reference(
                None if ref_schema == current else ref_schema,
                ref_table,
                ref_column,
                name,
                _mysql_type(ref_type, ref_table, ref_column),
                nullable == "YES",
                "unsigned" in ref_column_type.lower(),
                actions=" ".join(
                    f"ON {event} {rule}"
                    for event, rule in (("DELETE", on_delete), ("UPDATE", on_update))
                    # RESTRICT is the default; said explicitly with foreign_key_checks off,
                    # MariaDB stores NO ACTION instead.
                    if rule != "RESTRICT"
                ),
            )
        )
    references += _mysql_recorded(query, table, column, schema, references)
    max_id = query(
        f"SELECT max({ident('mysql', column)}) FROM {qualified('mysql', schema, table)}",  # noqa: S608
        [],
    )[0][0]
    return KeyInfo(
        "mysql",
        schema,
        table,
        column,
        _mysql_type(data_type, table, column),
        "auto_increment" if "auto_increment" in extra.lower() else "none",
        unsigned="unsigned" in column_type.lower(),
        references=tuple(references),
        max_id=None if max_id is None else int(max_id),
    )


def _mysql_recorded(
    query: Query, table: str, column: str, schema: str | None, present: list[Reference]
) -> list[Reference]:
    """The constraints a failed conversion dropped, from its record table (see ``mysql.py``)."""
    record = mysql.record_table(table, column)
    if not query(_MYSQL_TABLE, [schema, record]):
        return []
    rows = query(f"SELECT * FROM {qualified('mysql', schema, record)}", [])  # noqa: S608
    found = {(ref.table, ref.constraint) for ref in present}
    return [ref for ref in mysql.recorded(rows) if (ref.table, ref.constraint) not in found]


def _mysql_type(type_name: str, table: str, column: str) -> str:
    try:
        return _MYSQL_TYPES[type_name.lower()]
    except KeyError:
        raise InvalidArgument(
            f"{table}.{column} is {type_name}, not an integer: only integer keys are converted"
        ) from None


_PG_ALSO = """
SELECT pg_catalog.format_type(a.atttypid, NULL), NOT a.attnotnull, false
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = pg_catalog.to_regclass(%s) AND a.attname = %s AND NOT a.attisdropped
"""

_MYSQL_ALSO = """
SELECT DATA_TYPE, IS_NULLABLE = 'YES', LOCATE('unsigned', LOWER(COLUMN_TYPE)) > 0
FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = COALESCE(%s, DATABASE()) AND TABLE_NAME = %s AND COLUMN_NAME = %s
"""


def introspect_also(
    dialect: str, query: Query, columns: Sequence[tuple[str | None, str, str]]
) -> tuple[IdColumn, ...]:
    """The ``(schema, table, column)`` that must hold the IDs, those not bigint yet."""
    found = []
    for schema, table, column in columns:
        if dialect == "postgresql":
            rows = query(_PG_ALSO, [qualified("postgresql", schema, table), column])
            convert = _pg_type
        else:
            rows = query(_MYSQL_ALSO, [schema, table, column])
            convert = _mysql_type
        if not rows:
            raise InvalidArgument(f"no column {column!r} in table {table!r}: check the names")
        type_name, nullable, unsigned = rows[0]
        data_type = convert(str(type_name), table, column)
        if data_type != "bigint":
            found.append(IdColumn(schema, table, column, data_type, bool(nullable), bool(unsigned)))
    return tuple(found)


_PG_LIKELY = """
SELECT c.relname, a.attname
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
  AND a.atttypid IN ('pg_catalog.int2'::regtype, 'pg_catalog.int4'::regtype)
  AND a.attname LIKE '%%\\_id'
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint con WHERE con.conrelid = c.oid
                  AND con.contype = 'f' AND a.attnum = ANY (con.conkey))
ORDER BY 1, 2
"""

# Two plain reads joined in Python (MariaDB has crashed on correlated information_schema joins).
_MYSQL_LIKELY = (
    "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
    "COALESCE(%s, DATABASE()) AND DATA_TYPE IN ('tinyint', 'smallint', 'mediumint', 'int') "
    "AND COLUMN_NAME LIKE '%%\\_id' ORDER BY 1, 2",
    "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE "
    "TABLE_SCHEMA = COALESCE(%s, DATABASE()) AND REFERENCED_TABLE_NAME IS NOT NULL",
)


def likely_id_columns(query: Query, key: KeyInfo) -> list[str]:
    """``table.column`` of integer columns named ``*_id`` in the key's schema that no foreign key
    covers and the plan does not widen: they may hold the key's IDs (a polymorphic
    ``object_id``) and would overflow. Worth a warning, not a refusal: only a name says so."""
    if key.dialect == "postgresql":
        rows = query(_PG_LIKELY, [key.schema or "public"])
    else:
        candidates, covered = (query(sql, [key.schema]) for sql in _MYSQL_LIKELY)
        rows = [row for row in candidates if row not in set(covered)]
    widened = {(column.table, column.column) for column in key.also}
    widened.add((key.table, key.column))
    return [f"{table}.{column}" for table, column in rows if (table, column) not in widened]
