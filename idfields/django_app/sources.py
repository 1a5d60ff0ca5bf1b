"""The ``IDFIELDS`` setting as a configurator of the process's ID sources (``idfields._registry``).

Fields take theirs with :func:`bind_source`, which also stores it on the field: the per-row hot
path is then one attribute lookup and the call. The first call builds the source lazily
(settings are read then, never at import time); a ``setting_changed`` for IDFIELDS or DATABASES
hands over under the registry's lock: the old generators are closed (their nodes fenced and
released) and unbound before any new one claims a node.
"""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.dispatch import receiver
from django.utils.module_loading import import_string

from idfields._registry import SourceRegistry
from idfields.coordination import DecimalSource, LeaseSource
from idfields.django_app.conf import IdFieldsSettings, get_settings
from idfields.django_app.coordination import DjangoDatabase
from idfields.errors import LayoutError, NodeError, NodeNotConfigured
from idfields.generators import IdSource, make_generator
from idfields.layouts import Layout
from idfields.nodes import Assignment, DevelopmentNode, EnvironmentNode, NodeSource, StaticNode

__all__ = ["coordination_database"]

_databases: dict[str, DjangoDatabase] = {}


def generator_for(layout: str | Layout) -> IdSource:
    """The process's generator for ``layout`` (a layout name or a Layout)."""
    return _registry.get(layout)


def bind_source(holder: object, attribute: str, layout: str | Layout) -> IdSource:
    """:func:`generator_for` ``layout``, also stored as ``holder.<attribute>`` until reset()."""
    return _registry.bind(holder, attribute, layout)


def next_id(holder: object, attribute: str, layout: str | Layout) -> int:
    """The next ID of ``layout``, binding its source to ``holder`` (see ``SourceRegistry``)."""
    return _registry.next_id(holder, attribute, layout)


def coordination_database(alias: str | None = None) -> DjangoDatabase:
    """The coordination adapter of ``alias`` (default: ``IDFIELDS['DATABASE']``), one per alias."""
    alias = alias or get_settings().database
    if alias not in django_settings.DATABASES:
        raise ImproperlyConfigured(
            f"IDFIELDS['DATABASE'] = {alias!r} is not in DATABASES; name one of "
            f"{', '.join(map(repr, django_settings.DATABASES))} (manage.py check says so too)"
        )
    database = _databases.get(alias)
    if database is None:
        database = _databases.setdefault(alias, DjangoDatabase(alias))
    return database


def node_source(layout: Layout, settings: IdFieldsSettings | None = None) -> NodeSource:
    """The node source ``IDFIELDS['NODE_SOURCE']`` names, for ``layout``."""
    settings = settings or get_settings()
    kind = settings.node_source
    if kind == "lease":
        if _is_private(settings.database):
            return _private_nodes
        database = coordination_database(settings.database)
        if layout.timestamp is None:
            return DecimalSource(database)
        return LeaseSource(database, ttl_s=settings.lease_ttl)
    if kind == "static":
        if len(layout.node_fields) != 1:  # DecimalId: generator and launch ids of the deployment
            return EnvironmentNode()
        if settings.node is None:
            raise NodeNotConfigured(
                "IDFIELDS['NODE_SOURCE'] is 'static' but IDFIELDS['NODE'] is not set; set NODE "
                "to this process's node id, or use NODE_SOURCE 'lease'"
            )
        return StaticNode(settings.node)
    if kind == "env":
        return EnvironmentNode()
    if kind == "development":
        return DevelopmentNode()
    raise NodeNotConfigured(
        f"IDFIELDS['NODE_SOURCE'] = {kind!r} is unknown; use 'lease', 'static', 'env' or "
        "'development'"
    )


class PrivateDatabaseNode:
    """The node source of a database no other process can see (in-memory SQLite, such as
    Django's test database): a lease there would buy nothing, and its second connection would
    meet the first one's table locks ("database table is locked").

    Every Node field at its minimum; a generator rebuilt in this process starts after what its
    predecessor issued, and a layout without a timestamp takes the next generator id, so its
    counter never restarts on used values. A forked child works on its own copy of the database
    (Django's parallel runner clones it per worker), so it may use the same values.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._issued_until: dict[Layout, int] = {}
        self._blocks: dict[Layout, int] = {}

    def __repr__(self) -> str:
        return "PrivateDatabaseNode()"

    def acquire(self, layout: Layout) -> Assignment:
        values = {placed.name: placed.minimum for placed in layout.node_fields}
        with self._lock:
            if layout.timestamp is None and layout.node_fields:
                first = layout.node_fields[0]
                block = self._blocks.get(layout, first.minimum - 1) + 1
                if block > first.maximum:
                    raise NodeError(
                        f"layout {layout.name!r} used all {first.size} values of {first.name} "
                        "in this process's private database; restart the process"
                    )
                values[first.name] = self._blocks[layout] = block
            fence = self._issued_until.get(layout, 0)

        def release(issued_until_ns: int) -> None:
            with self._lock:
                self._issued_until[layout] = max(self._issued_until.get(layout, 0), issued_until_ns)

        return Assignment(values, not_before_ns=fence, release=release)


_private_nodes = PrivateDatabaseNode()


def _is_private(alias: str) -> bool:
    """True for an in-memory SQLite database: it lives in this process alone."""
    if alias not in connections:
        return False
    connection = connections[alias]
    is_in_memory_db = getattr(connection.creation, "is_in_memory_db", None)
    return bool(is_in_memory_db and is_in_memory_db(connection.settings_dict["NAME"]))


def _resolve(key: str | Layout) -> Layout:
    return get_settings().resolve_layout(key)


def _build(layout: Layout) -> IdSource:
    """The in-process generator, or the ID source ``IDFIELDS['GENERATORS']`` names (Redis...)."""
    settings = get_settings()
    if settings.problems:
        raise ImproperlyConfigured(
            f"idfields makes no ID from invalid settings: {'; '.join(settings.problems)} "
            "(manage.py check lists them as idfields.E008)"
        )
    factory = settings.generators.get(layout.name)
    if factory is None:
        options: dict[str, Any] = {}
        if layout.timestamp is not None:
            options["max_skew_ns"] = round(settings.max_skew * 1e9)
        return make_generator(layout, node_source(layout, settings), **options)
    made = (import_string(factory) if isinstance(factory, str) else factory)()
    if not isinstance(made, IdSource) or made.layout.name != layout.name:
        raise LayoutError(
            f"IDFIELDS['GENERATORS'][{layout.name!r}] made {made!r}, not an ID source of layout "
            f"{layout.name!r}; its factory must return an object with layout, __call__, take "
            "and close (an IdGenerator, RedisIdClient or HostSharedGenerator)"
        )
    return made


_registry = SourceRegistry(_resolve, _build)


def reset() -> None:
    """Close every generator (releasing leases) and connection, and unbind them from their
    holders, under the registry's lock; the next call rebuilds them."""
    _registry.replace(_close_databases)


def serves_another_database(connection: BaseDatabaseWrapper) -> bool:
    """Whether our private connection of ``connection``'s alias is open on another database
    (a test runner switched the alias's NAME to the test database, or back)."""
    database = _databases.get(connection.alias)
    name = database.database_name if database is not None else None
    return name is not None and name != str(connection.settings_dict["NAME"])


def _close_databases() -> None:
    databases = list(_databases.values())
    _databases.clear()
    for database in databases:
        database.close()


# Django calls receivers in the order they connected: conf's, which re-reads IDFIELDS, connected
# when this module imported conf, so a generator rebuilt after reset() sees the new value.
@receiver(setting_changed)
def _reset_on_change(*, setting: str, **kwargs: Any) -> None:
    if setting in ("IDFIELDS", "DATABASES"):
        reset()
