"""Where the generators meet the life of database connections: test databases and SQLite.

- Test databases. The generators lease their nodes on a private connection
  (``coordination.DjangoDatabase``). A runner that creates, clones or drops a test database
  (Django's, pytest-django's) first opens a connection without a database NAME; one that switches
  an alias to its test database (or back) opens the alias's next connection on another NAME. Both
  arrive through the ``connection_created`` signal, and each time every generator gives its node
  back and the private connections close (PostgreSQL refuses ``DROP DATABASE`` while a session is
  "being accessed by other users"); the next ID leases afresh from the database now in use.
- SQLite files. A lease cannot be written while this thread's connection is inside a transaction
  (one writer at a time), so when the application opens a connection to the lease database, the
  generators of the layouts in use claim their nodes, or renew them when due, right then,
  before any transaction. With ``ATOMIC_REQUESTS`` every ID is made inside a transaction, and
  the connection each request opens (``CONN_MAX_AGE = 0``, the default) is what keeps the
  leases renewed. A project's first ``migrate`` makes the lease tables midway, so the idfields
  migration claims once it commits, before the data migrations that follow it.
"""

from __future__ import annotations

import logging
from typing import Any

from django.apps import AppConfig
from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate

from idfields.django_app import sources
from idfields.django_app.checks import layout_names_in_use
from idfields.django_app.conf import get_settings
from idfields.django_app.coordination import PRIVATE_MARK
from idfields.generators import IdGenerator

# Implementation: nothing here is API (Django reaches this module through the app).
__all__: list[str] = []

logger = logging.getLogger("idfields.django_app")


def install(config: AppConfig) -> None:
    """Listen to new connections, and to ``migrate`` of ``config`` (idempotent)."""
    connection_created.connect(on_connection, dispatch_uid="idfields.lifecycle.on_connection")
    post_migrate.connect(after_migrate, sender=config, dispatch_uid="idfields.after_migrate")


def on_connection(*, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """Hand the nodes back when a database is about to be created or dropped or the alias now
    names another database; else claim SQLite leases before any transaction."""
    if getattr(connection, PRIVATE_MARK, False):
        return
    if connection.settings_dict.get("NAME") is None or sources.serves_another_database(connection):
        sources.reset()
    else:
        claim_sqlite_leases(connection=connection)


def after_migrate(*, using: str, **kwargs: Any) -> None:
    """A test database's first connection opened before ``migrate`` made the lease tables."""
    claim_sqlite_leases(connection=connections[using])


def claim_once_committed(apps: Any, schema_editor: Any) -> None:
    """The idfields migration's last step: its tables exist once it commits, so the leases are
    claimed then, outside any transaction, for the data migrations later in the same run (inside
    theirs, SQLite could not write a lease)."""
    connection = schema_editor.connection
    transaction.on_commit(
        lambda: claim_sqlite_leases(connection=connection), using=connection.alias
    )


def claim_sqlite_leases(*, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """On a new application connection to the SQLite lease database: claim or renew now."""
    settings = get_settings()
    if (
        connection.vendor != "sqlite"
        or connection.alias != settings.database
        or settings.node_source != "lease"
        or getattr(connection, PRIVATE_MARK, False)
    ):
        return
    try:
        for name in layout_names_in_use(settings):
            generator = sources.generator_for(name)
            if isinstance(generator, IdGenerator):
                generator()  # claims the node or renews it when due; one ID of plenty unused
    except Exception:  # e.g. before `migrate`; the first ID then raises with the reason
        logger.debug("no early node lease on %r", connection.alias, exc_info=True)
