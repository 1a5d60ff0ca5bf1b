"""No wait without a limit: the lock timeout in force before the first statement that touches a
table (introspection's ``SELECT max(id)`` included), and a timeout that names who holds the lock.

:func:`bounded` sets PostgreSQL's ``lock_timeout`` (MariaDB/MySQL: ``lock_wait_timeout``) for the
session around a whole operation and puts the old value back; the plans' own ``SET LOCAL`` stay,
for offline scripts. :func:`named_blockers` turns the server's lock-timeout error into
:class:`~idfields.errors.LockTimeout` naming the sessions holding locks on the key's table or a
table referencing it, read after the failed statement (its transaction rolled back).

On PostgreSQL both also put ``pg_catalog`` first on the session's search_path while they run
(:func:`catalog_first`): the conversion's own SQL (catalog reads, backfill, verify) names
operators such as ``=`` and ``||`` unqualified, and a migrating role whose path lists a schema
others can write before ``pg_catalog`` would otherwise run their operators with its rights.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from idfields.errors import LockTimeout
from idfields.migrations.convert.introspect import Query
from idfields.migrations.convert.model import lock_timeout_ms
from idfields.migrations.convert.quoting import check_dialect, qualified

# Implementation of the planner: nothing here is API.
__all__: list[str] = []

# PostgreSQL's lock_not_available; MariaDB/MySQL's ER_LOCK_WAIT_TIMEOUT (metadata locks too).
_PG_LOCK_TIMEOUT = "55P03"
_MYSQL_LOCK_TIMEOUT = 1205

_PG_HOLDERS = """
SELECT DISTINCT l.pid, l.mode, c.relname, COALESCE(a.state, ''), COALESCE(left(a.query, 80), '')
FROM pg_catalog.pg_locks l
JOIN pg_catalog.pg_class c ON c.oid = l.relation
LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
WHERE l.granted AND l.pid <> pg_catalog.pg_backend_pid() AND l.relation IN (
  SELECT pg_catalog.to_regclass(%s)
  UNION SELECT con.conrelid FROM pg_catalog.pg_constraint con
  WHERE con.contype = 'f' AND con.confrelid = pg_catalog.to_regclass(%s))
ORDER BY l.pid
"""

# Where each server says who holds a metadata lock, most precise first; the last resort lists
# the sessions with an open transaction (a reader's transaction holds its metadata locks).
_MYSQL_HOLDERS = (
    (
        "SELECT 1 FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'METADATA_LOCK_INFO' "
        "AND PLUGIN_STATUS = 'ACTIVE'",
        "SELECT DISTINCT THREAD_ID, LOCK_MODE, TABLE_NAME "
        "FROM information_schema.METADATA_LOCK_INFO "
        "WHERE TABLE_SCHEMA = COALESCE(%s, DATABASE()) AND THREAD_ID <> CONNECTION_ID() "
        "ORDER BY THREAD_ID",
    ),
    (
        "SELECT 1 FROM DUAL WHERE @@performance_schema = 1",
        "SELECT DISTINCT t.PROCESSLIST_ID, m.LOCK_TYPE, m.OBJECT_NAME "
        "FROM performance_schema.metadata_locks m JOIN performance_schema.threads t "
        "ON t.THREAD_ID = m.OWNER_THREAD_ID WHERE m.OBJECT_TYPE = 'TABLE' "
        "AND m.LOCK_STATUS = 'GRANTED' AND m.OBJECT_SCHEMA = COALESCE(%s, DATABASE()) "
        "AND t.PROCESSLIST_ID <> CONNECTION_ID() ORDER BY t.PROCESSLIST_ID",
    ),
    (
        "SELECT 1 FROM DUAL",
        "SELECT DISTINCT p.ID, 'open transaction', COALESCE(LEFT(p.INFO, 80), p.COMMAND) "
        "FROM information_schema.INNODB_TRX x JOIN information_schema.PROCESSLIST p "
        "ON p.ID = x.trx_mysql_thread_id WHERE p.ID <> CONNECTION_ID() ORDER BY p.ID",
    ),
)


@contextmanager
def bounded(dialect: str, query: Query, lock_timeout: str) -> Iterator[None]:
    """The session's lock timeout set to ``lock_timeout`` for the block (and, on PostgreSQL,
    ``pg_catalog`` first on its search_path), restored after."""
    milliseconds = lock_timeout_ms(lock_timeout)
    if check_dialect(dialect) == "postgresql":
        with (
            _session_setting(query, "lock_timeout", lambda _: f"{milliseconds}ms"),
            catalog_first(dialect, query),
        ):
            yield
        return
    old = query("SELECT @@SESSION.lock_wait_timeout", [])[0][0]
    query("SET SESSION lock_wait_timeout = %s", [math.ceil(milliseconds / 1000)])
    with _restored(query, ("SET SESSION lock_wait_timeout = %s", [old])):
        yield


@contextmanager
def catalog_first(dialect: str, query: Query) -> Iterator[None]:
    """PostgreSQL: ``pg_catalog`` searched first (before any schema the path lists) in the
    block, so an operator or function planted on the path never runs; elsewhere a no-op."""
    if check_dialect(dialect) != "postgresql":
        yield
        return
    with _session_setting(query, "search_path", _catalog_first_path):
        yield


def _catalog_first_path(path: str) -> str:
    if path.split(",", 1)[0].strip() == "pg_catalog":
        return path
    return f"pg_catalog, {path}" if path.strip() else "pg_catalog"


@contextmanager
def _session_setting(query: Query, name: str, value: Callable[[str], str]) -> Iterator[None]:
    """PostgreSQL's session setting ``name`` set to ``value(old)`` for the block; untouched
    when that is what it holds (a nested block: the conversion operations pin the path and
    then introspect, which pins it too)."""
    old = query("SELECT pg_catalog.current_setting(%s)", [name])[0][0]
    new = value(old)
    if new == old:
        yield
        return
    query("SELECT pg_catalog.set_config(%s, %s, false)", [name, new])
    with _restored(query, ("SELECT pg_catalog.set_config(%s, %s, false)", [name, old])):
        yield


@contextmanager
def _restored(query: Query, restore: tuple[str, list[object]]) -> Iterator[None]:
    """Run ``restore`` after the block, and after a failure where the server still allows it."""
    try:
        yield
    except BaseException:
        # A failed transaction may refuse every statement until it ends; its rollback then
        # restores the setting by itself.
        with suppress(Exception):
            query(*restore)
        raise
    query(*restore)


def is_lock_timeout(error: BaseException) -> bool:
    """Whether the error, or one it wraps (Django's, SQLAlchemy's), is the server's timeout."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if getattr(current, "sqlstate", None) == _PG_LOCK_TIMEOUT:
            return True
        args = getattr(current, "args", ())
        if args and args[0] == _MYSQL_LOCK_TIMEOUT:
            return True
        pending += [current.__cause__, current.__context__, getattr(current, "orig", None)]
    return False


def holders(dialect: str, query: Query, table: str, schema: str | None) -> list[tuple[Any, ...]]:
    """(pid, lock mode, table or query) of other sessions holding locks that block us."""
    if check_dialect(dialect) == "postgresql":
        name = qualified("postgresql", schema, table)
        return [
            (pid, mode, f"{relname}, {state}: {text!r}" if text else relname)
            for pid, mode, relname, state, text in query(_PG_HOLDERS, [name, name])
        ]
    for available, listing in _MYSQL_HOLDERS:
        if query(available, []):
            found = query(listing, [schema] if "%s" in listing else [])
            if found:
                return found
    return []


@contextmanager
def named_blockers(
    dialect: str, query: Query, table: str, schema: str | None, lock_timeout: str
) -> Iterator[None]:
    """Turn a lock timeout inside the block into :class:`LockTimeout` naming the holders.

    Wrap it outside the transaction that failed: the holders are read after its rollback.
    """
    try:
        yield
    except Exception as exc:
        if not is_lock_timeout(exc):
            raise
        with catalog_first(dialect, query):
            found = holders(dialect, query, table, schema)
        who = "; ".join(f"pid {pid} ({mode}, {what})" for pid, mode, what in found)
        setting = "lock_timeout" if dialect == "postgresql" else "lock_wait_timeout"
        stop = (
            f"SELECT pg_terminate_backend({found[0][0]})"
            if dialect == "postgresql" and found
            else f"KILL {found[0][0]}"
            if found
            else "SHOW PROCESSLIST"
        )
        raise LockTimeout(
            f"gave up after {setting}={lock_timeout} waiting for a lock on {table} or a table "
            f"referencing it: held by {who or 'no session found any more'}. The failed step "
            f"changed nothing; end that session ({stop}) or let it finish, then run the "
            "migration again"
        ) from exc
