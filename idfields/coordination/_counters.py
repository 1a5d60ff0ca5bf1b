"""Persistent counters (``idfields_counter``) and the launch log (``idfields_launch``).

A counter value is taken by one ``UPDATE ... SET value = value + 1`` and read back in the same
transaction: the row lock serialises concurrent takers on every vendor, and MariaDB needs no
``UPDATE ... RETURNING``. The row is created beforehand in its own statement, so no transaction
ever upgrades a shared lock on a duplicate key (MySQL's classic insert deadlock).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from idfields.coordination._database import (
    Database,
    check_length,
    durable,
    insert_if_absent,
    text,
    vendor_of,
)
from idfields.errors import LayoutExhausted, NodeError, NodeNotConfigured
from idfields.nodes import development_mode

LAUNCH_ENV = "IDFIELDS_LAUNCH_ID"
LAUNCH_COUNTER = "launch"
MAX_LAUNCH_ID = 99_999
RECORD_LAUNCH_HINT = "manage.py idfields_launch --label <version> (or record_launch())"
RECORD_LAUNCH_AFTER = (
    "manage.py idfields_launch --label <version> --after (or record_launch(after=))"
)

_INSERT_LAUNCH = (
    "INSERT INTO idfields_launch (id, label, created_at) VALUES (%s, %s, CURRENT_TIMESTAMP)"
)
# Django and SQLAlchemy keep MySQL DATETIMEs in UTC (SQLite's CURRENT_TIMESTAMP is UTC already).
_INSERT_LAUNCH_MYSQL = _INSERT_LAUNCH.replace("CURRENT_TIMESTAMP", "UTC_TIMESTAMP(6)")


def next_value(
    database: Database, name: str, floor: Callable[[Database], int] | None = None
) -> int:
    """Take the next value (1, 2, ...) of the counter ``name``; no value is ever given twice.

    ``floor``, read once the row is locked, is a value taken elsewhere that the row may not
    show (a database-side claim whose increment a rollback undid): the value taken passes it.
    """
    _ensure_counter(database, name)
    with durable(database):
        taken = _increment(database, name)
        above = floor(database) if floor is not None else 0
        if taken <= above:
            taken = above + 1
            _set(database, name, taken)
        return taken


def counter_value(database: Database, name: str) -> int:
    """The last value taken from counter ``name`` (0 if none was), for reports."""
    rows = database.execute("SELECT value FROM idfields_counter WHERE name = %s", [name]).rows
    return int(rows[0][0]) if rows else 0


def record_launch(
    database: Database,
    label: str,
    *,
    after: int = 0,
    columns: Sequence[tuple[str, str]] = (),
) -> int:
    """Record a deployment in the launch log and return its id (1..99,999, never reused).

    The id is max(id) + 1, taken under the row lock of the ``launch`` counter, which also
    remembers ids whose rows were deleted so that they are not handed out again; and above
    ``after``, the highest launch of DecimalIds this database holds that another database
    issued. A database that records no launch yet while a DecimalId column holds rows got
    them from another database (logical replication or a copy without the idfields tables),
    whose launches it does not know: it is refused, naming the fix, unless ``after`` says
    where those launches end. The columns checked are ``columns`` (table, column) and, on
    PostgreSQL, every column that defaults to ``idfields.next_decimal()``.
    """
    check_length("launch label", label, 100)
    if after <= 0:
        _check_no_foreign_launches(database, columns)
    _ensure_counter(database, LAUNCH_COUNTER)
    with durable(database):
        return record_launch_here(database, label, after)


def _check_no_foreign_launches(database: Database, columns: Sequence[tuple[str, str]]) -> None:
    if database.execute("SELECT MAX(id) FROM idfields_launch").rows[0][0] is not None:
        return
    named = [(_quoted(database, table), table, column) for table, column in columns]
    for table_sql, table, column in [*named, *_next_decimal_columns(database)]:
        found = database.execute(
            f"SELECT 1 FROM {table_sql} WHERE {_quoted(database, column)} IS NOT NULL LIMIT 1"  # noqa: S608
        ).rows
        if found:
            raise NodeError(
                f"this database records no launch, yet its DecimalId column {table}.{column} "
                "holds IDs: they came from another database (logical replication or a copy "
                "without the idfields tables), whose launches this one does not know, and a "
                "first launch here may be one of them. Copy the idfields tables from that "
                "database first (idfields_launch and idfields_counter, or replicate them: "
                "docs/how-to/high-availability.md), or record the launch above the highest "
                f"one there (the largest id of its idfields_launch): {RECORD_LAUNCH_AFTER}"
            )


def _quoted(database: Database, name: str) -> str:
    quote = "`" if vendor_of(database) == "mysql" else '"'
    return quote + name.replace(quote, quote * 2) + quote


def _next_decimal_columns(database: Database) -> list[tuple[str, str, str]]:
    """On PostgreSQL, the columns whose default is ``idfields.next_decimal()``: (the table as
    SQL, the table, the column)."""
    if database.vendor != "postgresql":
        return []
    rows = database.execute(
        "SELECT CAST(CAST(a.attrelid AS regclass) AS text), a.attname FROM pg_catalog.pg_attrdef "
        "AS d JOIN pg_catalog.pg_attribute AS a ON a.attrelid = d.adrelid AND a.attnum = d.adnum "
        "WHERE pg_catalog.pg_get_expr(d.adbin, d.adrelid) LIKE %s",
        ["%idfields.next_decimal()%"],
    ).rows
    return [(text(table), text(table), text(column)) for table, column in rows]


def record_launch_here(database: Database, label: str, after: int = 0) -> int:
    """:func:`record_launch` inside the caller's transaction, the ``launch`` counter row
    created beforehand."""
    counted = _increment(database, LAUNCH_COUNTER)
    top = database.execute("SELECT MAX(id) FROM idfields_launch").rows[0][0]
    launch = max(counted, int(top or 0) + 1, after + 1)
    if launch > MAX_LAUNCH_ID:
        raise LayoutExhausted(
            f"all {MAX_LAUNCH_ID:,} launch ids are used, so no DecimalId generator can start; "
            "move DecimalId columns to a new layout (or a time-based one)"
        )
    if launch != counted:
        _set(database, LAUNCH_COUNTER, launch)
    mysql = vendor_of(database) == "mysql"
    database.execute(_INSERT_LAUNCH_MYSQL if mysql else _INSERT_LAUNCH, [launch, label])
    return launch


def current_launch(database: Database) -> int:
    """The launch this process belongs to: ``IDFIELDS_LAUNCH_ID`` if set, else the latest one."""
    raw = os.environ.get(LAUNCH_ENV, "").strip()
    if raw:
        return _launch_from_env(raw)
    top = database.execute("SELECT MAX(id) FROM idfields_launch").rows[0][0]
    if top is None:
        raise NodeNotConfigured(
            f"no launch is recorded, and DecimalId needs one: run {RECORD_LAUNCH_HINT} once per "
            f"deployment, or set {LAUNCH_ENV} in the deployment"
        )
    return int(top)


def _launch_from_env(raw: str) -> int:
    try:
        launch = int(raw)
    except ValueError:
        raise NodeError(
            f"{LAUNCH_ENV}={raw!r} is not an integer; set it to 1..{MAX_LAUNCH_ID}"
        ) from None
    lowest = 0 if development_mode() else 1
    if not lowest <= launch <= MAX_LAUNCH_ID:
        raise NodeError(
            f"{LAUNCH_ENV}={launch} is out of range {lowest}..{MAX_LAUNCH_ID} (0 is for tests); "
            f"set it to a launch id recorded by {RECORD_LAUNCH_HINT}"
        )
    return launch


def _ensure_counter(database: Database, name: str) -> None:
    check_length("counter name", name, 100)
    insert_if_absent(database, "idfields_counter", ("name", "value"), (name, 0))


def _increment(database: Database, name: str) -> int:
    database.execute("UPDATE idfields_counter SET value = value + 1 WHERE name = %s", [name])
    return counter_value(database, name)


def _set(database: Database, name: str, value: int) -> None:
    database.execute("UPDATE idfields_counter SET value = %s WHERE name = %s", [value, name])
