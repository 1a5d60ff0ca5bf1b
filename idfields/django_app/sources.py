"""One generator per layout per process, with the node source the ``IDFIELDS`` setting names.

Fields take theirs with :func:`bind_source`, which also stores it on the field: the per-row hot
path is then one attribute lookup and the call. The first call builds the generator lazily
(settings are read then, never at import time); a ``setting_changed`` for IDFIELDS or DATABASES
closes the generators (releasing their leases) and unbinds them, so the next call builds them
afresh.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from django.core.signals import setting_changed
from django.db import connections
from django.dispatch import receiver
from django.utils.module_loading import import_string

from idfields.coordination import DecimalSource, LeaseSource
from idfields.django_app.conf import IdFieldsSettings, get_settings
from idfields.django_app.coordination import DjangoDatabase
from idfields.errors import LayoutError, NodeError, NodeNotConfigured
from idfields.generators import IdSource, make_generator
from idfields.layouts import Layout
from idfields.nodes import Assignment, DevelopmentNode, EnvironmentNode, NodeSource, StaticNode

_generators: dict[str | Layout, IdSource] = {}  # by the argument callers pass
_by_name: dict[str, IdSource] = {}  # one generator per layout, however it is named
_databases: dict[str, DjangoDatabase] = {}
_bound: list[tuple[weakref.ref[Any], str]] = []  # (holder, attribute) set by bind_source()
_lock = threading.Lock()


def generator_for(layout: str | Layout) -> IdSource:
    """The process's generator for ``layout`` (a layout name or a Layout)."""
    try:
        return _generators[layout]
    except KeyError:
        return _create(layout)


def bind_source(holder: object, attribute: str, layout: str | Layout) -> IdSource:
    """:func:`generator_for` ``layout``, also stored as ``holder.<attribute>`` until reset().

    The attribute is set under the lock, and only while the generator is still the current one,
    so a concurrent reset() never leaves a closed generator bound.
    """
    while True:
        source = generator_for(layout)
        with _lock:
            if _generators.get(layout) is source:
                setattr(holder, attribute, source)
                _bound.append((weakref.ref(holder), attribute))
                return source


def coordination_database(alias: str | None = None) -> DjangoDatabase:
    """The coordination adapter of ``alias`` (default: ``IDFIELDS['DATABASE']``), one per alias."""
    alias = alias or get_settings().database
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


def _create(key: str | Layout) -> IdSource:
    with _lock:
        settings = get_settings()
        layout = settings.resolve_layout(key)
        generator = _by_name.get(layout.name)
        if generator is None:
            generator = _build(layout, settings)
            _by_name[layout.name] = generator
        elif generator.layout != layout:
            raise LayoutError(
                f"two different layouts are named {layout.name!r} (leases and reports key "
                "layouts by name); give each layout a name of its own"
            )
        _generators[key] = generator
        return generator


def _build(layout: Layout, settings: IdFieldsSettings) -> IdSource:
    """The in-process generator, or the ID source ``IDFIELDS['GENERATORS']`` names (Redis...)."""
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


def reset() -> None:
    """Close every generator (releasing leases) and connection, and unbind them from their
    holders; the next call rebuilds them."""
    with _lock:
        generators = list(_by_name.values())
        _generators.clear()
        _by_name.clear()
        for holder_ref, attribute in _bound:
            holder = holder_ref()
            if holder is not None:
                vars(holder).pop(attribute, None)
        _bound.clear()
        databases = list(_databases.values())
        _databases.clear()
    for generator in generators:
        generator.close()
    for database in databases:
        database.close()


@receiver(setting_changed)
def _reset_on_change(*, setting: str, **kwargs: Any) -> None:
    if setting in ("IDFIELDS", "DATABASES"):
        reset()
