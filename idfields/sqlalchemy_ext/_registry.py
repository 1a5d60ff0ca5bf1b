"""SQLAlchemy's ``configure()``: the configurator of the process's ID sources.

Models are usually defined (at import) before the application configures its node source (at
start-up), so column defaults never hold a generator directly: each holds a :class:`_Slot` whose
``call`` is bound to its layout's source at the first ID, from the configuration in force then.
:func:`configure` hands over under the registry's lock: the generators made so far are closed
(their nodes fenced and released) and unbound before the new configuration applies, so a
generator that replaces one never repeats its IDs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from idfields._registry import SourceRegistry
from idfields.errors import ConfigurationError, GeneratorClosed, InvalidArgument, WrongArgumentType
from idfields.generators import DEFAULT_MAX_SKEW_NS, IdSource, make_generator
from idfields.generators._hotpath import compiled
from idfields.layouts import BUILTIN_LAYOUTS, Layout
from idfields.nodes import NodeSource

SourceFactory = Callable[[Layout], NodeSource]
IdSourceOrFactory = IdSource | Callable[[], IdSource]
_Default = TypeVar("_Default", Callable[[], int], Callable[[object], int])


@dataclass(frozen=True)
class _Config:
    source: NodeSource | SourceFactory | None = None
    layouts: Mapping[str, Layout] = field(default_factory=dict)
    max_skew_ns: int = DEFAULT_MAX_SKEW_NS
    generators: Mapping[str, IdSourceOrFactory] = field(default_factory=dict)


_config = _Config()
_slots: dict[str, _Slot] = {}
_slots_lock = threading.Lock()
# context_default's compiled twin (SlotDefault(slot, GeneratorClosed)), when built
_SlotDefault: Callable[[_Slot, type[GeneratorClosed]], Callable[[object], int]] | None
_SlotDefault = compiled("SlotDefault")


class _Slot:
    """One layout's place in the column defaults; ``call`` becomes its source once bound."""

    def __init__(self, name: str, layout: Layout | None) -> None:
        self.name = name
        self.layout = layout  # given to id_column directly, else resolved from the configuration

    def __repr__(self) -> str:
        return f"<idfields slot {self.name!r}>"

    def call(self) -> int:
        """The first ID (and the one after a handover); binding shadows this method."""
        return _registry.next_id(self, "call", self.name)

    def after_closed(self) -> int:
        """The next ID when configure() closed the source this thread had in hand."""
        return _Slot.call(self)


def _slot(layout: str | Layout) -> _Slot:
    name = layout.name if isinstance(layout, Layout) else layout
    if not isinstance(name, str):
        raise WrongArgumentType(
            f"layout must be a layout name or an idfields Layout, got {layout!r}"
        )
    given = layout if isinstance(layout, Layout) else None
    with _slots_lock:
        slot = _slots.get(name)
        if slot is None:
            slot = _slots[name] = _Slot(name, given)
        elif given is not None and slot.layout not in (None, given):
            raise InvalidArgument(
                f"two different layouts are both named {name!r}; give each a unique name"
            )
        elif given is not None:
            slot.layout = given
    return slot


def resolve_layout(key: str | Layout) -> Layout:
    """The layout an ID column names: its own, a configured one, or a built-in."""
    slot = _slot(key)
    layout = slot.layout or _config.layouts.get(slot.name) or BUILTIN_LAYOUTS.get(slot.name)
    if layout is None:
        known = ", ".join([*BUILTIN_LAYOUTS, *_config.layouts])
        raise ConfigurationError(
            f"unknown idfields layout {slot.name!r} (known: {known}); register it with "
            "idfields.sqlalchemy_ext.configure(layouts=[...]) or pass the Layout itself"
        )
    return layout


def _build(layout: Layout) -> IdSource:
    config = _config
    given = config.generators.get(layout.name)
    if given is not None:
        return _other_source(layout.name, given)
    source = config.source
    if source is not None and not isinstance(source, NodeSource):
        source = source(layout)
    options = {"max_skew_ns": config.max_skew_ns} if layout.timestamp is not None else {}
    return make_generator(layout, source, **options)


_registry = SourceRegistry(resolve_layout, _build)


def _other_source(name: str, given: IdSourceOrFactory) -> IdSource:
    """An ID source other than the in-process generator (the Redis tier, the host-shared one)."""
    made = given if isinstance(given, IdSource) else given()
    if not isinstance(made, IdSource) or made.layout.name != name:
        raise WrongArgumentType(
            f"configure(generators={{{name!r}: ...}}) gave {made!r}, not an ID source of layout "
            f"{name!r}; pass an object with layout, __call__, take and close (RedisIdClient, "
            "HostSharedGenerator, IdGenerator) or a factory returning one"
        )
    return made


def configure(
    *,
    source: NodeSource | SourceFactory | None = None,
    layouts: Iterable[Layout] | Mapping[str, Layout] = (),
    max_skew: float = DEFAULT_MAX_SKEW_NS / 1e9,
    generators: Mapping[str, IdSourceOrFactory] | None = None,
) -> None:
    """Say where ``id_column`` generators get their node, which user layouts exist, and the skew.

    ``source`` is one NodeSource serving every layout (``LeaseSource(SQLAlchemyDatabase(e))``)
    or a factory called with each layout (needed for fixed nodes such as ``StaticNode``, which
    serve one generator each). Without one, the node comes from the environment
    (``IDFIELDS_NODE_ID``) or development mode (``default_source``). ``max_skew`` is how many
    seconds a generator may run ahead of a clock that stepped back. ``generators`` maps layout
    names to another ID source (or a factory of one) used instead of the in-process generator:
    ``{"snowflake": RedisIdClient([...])}``. Calling this again closes
    the generators made so far, releasing their leases; the next ID uses the new settings.
    """
    if isinstance(max_skew, bool) or not isinstance(max_skew, int | float) or max_skew < 0:
        raise InvalidArgument(f"max_skew must be a number of seconds >= 0, got {max_skew!r}")
    if source is not None and not callable(source) and not isinstance(source, NodeSource):
        raise WrongArgumentType(
            f"source must be a NodeSource (with acquire(layout)) or a callable taking a Layout "
            f"and returning one, got {source!r}"
        )
    named = dict(layouts) if isinstance(layouts, Mapping) else {lay.name: lay for lay in layouts}
    for name, layout in named.items():
        if not isinstance(layout, Layout):
            raise WrongArgumentType(f"layouts[{name!r}] is {layout!r}, not an idfields Layout")
    new = _Config(source, named, round(max_skew * 1e9), dict(generators or {}))

    def apply() -> None:
        global _config
        _config = new

    _registry.replace(apply)


def get_generator(layout: str | Layout = "snowflake") -> IdSource:
    """The generator ``id_column(layout)`` uses in this process (made now if needed)."""
    return _registry.get(_slot(layout).name)


def id_default(layout: str | Layout = "snowflake") -> Callable[[], int]:
    """A zero-argument callable returning the next ID of ``layout``, for ``default=``."""
    slot = _slot(layout)

    def next_id() -> int:
        try:
            return slot.call()
        except GeneratorClosed:
            return slot.after_closed()

    return _named(next_id, slot)


def context_default(layout: str | Layout = "snowflake") -> Callable[[object], int]:
    """The default ``id_column`` installs: the next ID, given SQLAlchemy's execution context.

    SQLAlchemy calls it per row with the context (``id_column`` keeps it from being wrapped in a
    ``lambda ctx: fn()``). Compiled, it is ``_speedups.SlotDefault``, the same steps as the
    function below without a Python frame of its own: every row saves one.
    """
    slot = _slot(layout)
    if _SlotDefault is not None:
        return _SlotDefault(slot, GeneratorClosed)

    def next_id(context: object) -> int:
        try:
            return slot.call()
        except GeneratorClosed:
            return slot.after_closed()

    return _named(next_id, slot)


def _named(default: _Default, slot: _Slot) -> _Default:
    """Name a default after its layout, so reprs and tracebacks say which IDs it makes."""
    default.__qualname__ = default.__name__ = f"next_{slot.name}_id"
    return default
