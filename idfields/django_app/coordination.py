"""The core coordination's ``Database`` on a private connection to a Django database alias.

A lease must outlive the request that happened to ask for the first ID: a rolled-back request
must not roll back a lease, and a lease claim must not wait behind the request's locks. So this
adapter opens its own connection (``connections.create_connection``) per process, shared by the
process's threads under a lock (claims and renewals are rare), and opens a new one in a forked
child, never touching the parent's socket. Before each use outside a transaction the connection
is checked with the backend's own ``is_usable()`` (SQLAlchemy's ``pool_pre_ping``): a database
restart or ``pg_terminate_backend`` leaves it a dead socket, and the first claim after an outage
must not fail on it (nor the requests of the back-off that would follow).

SQLite lets one writer at a time: a lease written while this thread's own connection to the same
file is inside a transaction would wait for that very transaction, and fail after the busy
timeout with "database is locked". That case is refused at once with
:class:`SQLiteTransactionOpen`, which names the cause; the app claims its leases when a
connection opens (``warm_up``), before any transaction, so it stays rare.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.apps import apps
from django.db import DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from idfields import _forking
from idfields.coordination import Result
from idfields.coordination._database import missing_table
from idfields.errors import SQLiteTransactionOpen, TablesMissing

# Implementation: nothing here is API (Django reaches this module through the app).
__all__: list[str] = []

PRIVATE_MARK = "_idfields_coordination"


class DjangoDatabase:
    """``idfields.coordination.Database`` on its own connection to the alias ``alias``."""

    def __init__(self, alias: str = "default") -> None:
        self.alias = alias
        self._lock = threading.RLock()
        self._wrapper: BaseDatabaseWrapper | None = None
        self._name: str | None = None
        self._inherited: list[BaseDatabaseWrapper] = []
        _forking.track(self)

    def __repr__(self) -> str:
        return f"DjangoDatabase({self.alias!r})"

    @property
    def vendor(self) -> str:
        return self._connection().vendor

    def execute(self, sql: str, params: Sequence[object] = ()) -> Result:
        self._refuse_inside_sqlite_transaction()
        with self._lock:
            wrapper = self._live_connection()
            try:
                args: list[Any] = list(params)
                with wrapper.cursor() as cursor:
                    cursor.execute(sql, args)
                    rows = [tuple(row) for row in cursor.fetchall()] if cursor.description else []
                    return Result(rows, cursor.rowcount)
            except Exception as error:
                if wrapper.get_autocommit():  # a broken connection is reopened on the next call
                    wrapper.close()
                if isinstance(error, DatabaseError) and (table := missing_table(error)):
                    raise self._tables_missing(table) from error
                raise

    def _tables_missing(self, table: str) -> TablesMissing:
        fix = (
            "run 'python manage.py migrate idfields'"
            if apps.is_installed("idfields.django_app")
            else "add 'idfields.django_app' to INSTALLED_APPS, then run "
            "'python manage.py migrate idfields'"
        )
        return TablesMissing(
            f"table {table} does not exist in database {self.alias!r}: the idfields tables "
            f"(node leases, launches, counters) are made by the idfields app's migrations; {fix}"
        )

    @contextmanager
    def atomic(self) -> Iterator[None]:
        self._refuse_inside_sqlite_transaction()
        with self._lock:
            wrapper = self._live_connection()
            wrapper.set_autocommit(False)
            try:
                yield
                wrapper.commit()
            except BaseException:
                wrapper.rollback()
                raise
            finally:
                wrapper.set_autocommit(True)

    def _refuse_inside_sqlite_transaction(self) -> None:
        own = connections[self.alias]  # this thread's connection of the application
        if own.vendor != "sqlite" or own.connection is None or not own.connection.in_transaction:
            return
        raise SQLiteTransactionOpen(
            f"idfields must write its node lease to SQLite database {self.alias!r}, but this "
            "thread is inside a transaction on it (transaction.atomic(), ATOMIC_REQUESTS), and "
            "SQLite lets one writer at a time: the lease would wait for this very transaction "
            "('database is locked'). Let the first ID of the process come before the "
            "transaction (the app claims leases when a connection opens; see the README), or "
            "set IDFIELDS = {'NODE_SOURCE': 'static', 'NODE': <unique per process>}"
        )

    @property
    def database_name(self) -> str | None:
        """The NAME of the database the private connection was made for (None before its first
        use). It shares the alias's settings, which a test runner rewrites in place."""
        return self._name

    def close(self) -> None:
        """Close the private connection (it reopens on the next call)."""
        with self._lock:
            if self._wrapper is not None:
                self._wrapper.close()

    def _live_connection(self) -> BaseDatabaseWrapper:
        """The connection, replaced first if the server ended its session (not inside
        ``atomic()``, whose statements must share one session)."""
        wrapper = self._connection()
        if wrapper.connection is not None and wrapper.get_autocommit() and not wrapper.is_usable():
            wrapper.close()  # the next cursor opens a new session
        return wrapper

    def _connection(self) -> BaseDatabaseWrapper:
        if self._wrapper is None:
            wrapper = connections.create_connection(self.alias)
            wrapper.inc_thread_sharing()  # guarded by our lock
            setattr(wrapper, PRIVATE_MARK, True)  # not a connection of the application
            self._wrapper = wrapper
            self._name = str(wrapper.settings_dict["NAME"])
        return self._wrapper

    def forked(self) -> None:
        # The parent's connection is kept, unused and unclosed: closing or collecting it here
        # would end the parent's session on the shared socket.
        if self._wrapper is not None:
            self._inherited.append(self._wrapper)
        self._wrapper = None
        self._lock = threading.RLock()
