"""Where the generators meet the life of database connections: test databases and SQLite.

- Test databases. The generators lease their nodes on a private connection
  (``coordination.DjangoDatabase``). A runner that creates a test database switches ``NAME``
  under that connection's feet, and one that destroys it needs every session gone (PostgreSQL
  refuses ``DROP DATABASE`` while it is "being accessed by other users"). Django's runner and
  pytest-django both go through ``BaseDatabaseCreation.create_test_db`` / ``destroy_test_db``,
  so wrapping those two methods is the one hook that serves both, and any third-party suite run
  with our fields: every generator gives its node back first, and the next ID leases afresh.
- SQLite files. A lease cannot be written while this thread's connection is inside a transaction
  (one writer at a time), so when the application opens a connection to the lease database, the
  generators of the layouts in use claim their nodes, or renew them when due, right then,
  before any transaction. With ``ATOMIC_REQUESTS`` every ID is made inside a transaction, and
  the connection each request opens (``CONN_MAX_AGE = 0``, the default) is what keeps the
  leases renewed.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.creation import BaseDatabaseCreation
from django.db.backends.signals import connection_created

from idfields.django_app import sources
from idfields.django_app.checks import layout_names_in_use
from idfields.django_app.conf import get_settings
from idfields.django_app.coordination import PRIVATE_MARK
from idfields.generators import IdGenerator

logger = logging.getLogger("idfields.django_app")
_WRAPPED = "_idfields_releases_leases"


def install() -> None:
    """Wrap the two creation methods and listen to new connections (idempotent)."""
    # No documented hook surrounds a test database's creation and drop for every runner.
    for name in ("create_test_db", "destroy_test_db"):
        method = getattr(BaseDatabaseCreation, name)
        if not getattr(method, _WRAPPED, False):
            setattr(BaseDatabaseCreation, name, _releasing_leases_first(method))
    connection_created.connect(claim_sqlite_leases, dispatch_uid="idfields.claim_sqlite_leases")


def _releasing_leases_first(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(self: BaseDatabaseCreation, *args: Any, **kwargs: Any) -> Any:
        sources.reset()  # create: leases live in the database being replaced; destroy: see above
        result = method(self, *args, **kwargs)
        if method.__name__ == "create_test_db":  # its connection opened before `migrate` ran
            claim_sqlite_leases(connection=self.connection)
        return result

    setattr(wrapper, _WRAPPED, True)
    return wrapper


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
