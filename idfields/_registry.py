"""The per-process ID sources of the ORM layers: one per layout, built at first use, handed over
under one lock.

The Django settings (``idfields.django_app.sources``) and SQLAlchemy's ``configure()``
(``idfields.sqlalchemy_ext._registry``) are thin configurators of one :class:`SourceRegistry`:
they say how a key resolves to a layout and how a layout's source is built; the registry owns
the rules that keep IDs unique when the configuration changes while threads issue:

- one source per layout name, however callers name it (two different layouts under one name
  are refused: leases and reports know layouts by name);
- :meth:`SourceRegistry.replace` closes every source *under the lock*, before the new
  configuration applies: a closed generator gives its node back saying how far it issued, so
  the next holder of that node (built only after the lock is released) starts after it;
- a holder (a Django field, an ``id_column`` default) keeps its source as a plain attribute for
  a one-lookup hot path; ``replace`` removes the attribute, and a caller that still had the old
  source in hand gets :class:`~idfields.errors.GeneratorClosed` from it and asks again
  (:meth:`SourceRegistry.next_id`): a closed generator never issues again.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable

from idfields import _forking
from idfields.errors import GeneratorClosed, LayoutError
from idfields.generators import IdSource
from idfields.layouts import Layout

logger = logging.getLogger("idfields.registry")

Key = str | Layout


class SourceRegistry:
    """One ID source per layout name; see the module docstring.

    ``resolve(key)`` turns what callers pass (a name or a Layout) into the layout, and
    ``build(layout)`` makes its source; both run under the registry's lock.
    """

    def __init__(self, resolve: Callable[[Key], Layout], build: Callable[[Layout], IdSource]):
        self._resolve = resolve
        self._build = build
        self._lock = threading.RLock()
        self._by_key: dict[Key, IdSource] = {}
        self._by_name: dict[str, IdSource] = {}
        self._bound: list[tuple[weakref.ref[object], str]] = []  # (holder, attribute)
        _forking.track(self)

    def forked(self) -> None:
        # A thread of the parent building a source (a lease claim) held the lock at the fork:
        # that thread does not exist here, and its lock would stay held.
        self._lock = threading.RLock()

    def get(self, key: Key) -> IdSource:
        """The current source of ``key``, built now if there is none."""
        source = self._by_key.get(key)
        if source is not None:
            return source
        with self._lock:
            source = self._by_key.get(key)
            if source is None:
                layout = self._resolve(key)
                source = self._by_name.get(layout.name)
                if source is None:
                    source = self._by_name[layout.name] = self._build(layout)
                elif source.layout != layout:
                    raise LayoutError(
                        f"two different layouts are named {layout.name!r} (leases and reports "
                        "know layouts by name); give each layout a name of its own"
                    )
                self._by_key[key] = source
            return source

    def bind(self, holder: object, attribute: str, key: Key) -> IdSource:
        """:meth:`get`, also set as ``holder.<attribute>`` until the next :meth:`replace`.

        Set under the lock and only while the source is still the current one, so a concurrent
        ``replace`` never leaves a closed source bound.
        """
        while True:
            source = self.get(key)
            with self._lock:
                if self._by_key.get(key) is source:
                    setattr(holder, attribute, source)
                    self._bound.append((weakref.ref(holder), attribute))
                    return source

    def next_id(self, holder: object, attribute: str, key: Key) -> int:
        """The next ID of ``key``'s current source, bound to ``holder`` on the way: the path of a
        holder's first ID and of a caller whose source was closed under its feet."""
        while True:
            source = self.bind(holder, attribute, key)
            try:
                return source()
            except GeneratorClosed:  # closed by replace() (or by hand): drop it, take the next
                self._forget(source)

    def _forget(self, closed: IdSource) -> None:
        with self._lock:
            for table in (self._by_key, self._by_name):
                for key in [key for key, source in table.items() if source is closed]:
                    del table[key]  # type: ignore[arg-type]

    def replace(self, change: Callable[[], None] | None = None) -> None:
        """Close every source and unbind it, then apply ``change`` (the new configuration), all
        under the lock: no source of the new configuration claims a node before the old ones
        gave theirs back. A source whose close fails is logged and dropped: a lease it could
        not release lapses at its expiry, never earlier."""
        with self._lock:
            sources = list(self._by_name.values())
            self._by_key.clear()
            self._by_name.clear()
            for holder_ref, attribute in self._bound:
                holder = holder_ref()
                if holder is not None:
                    vars(holder).pop(attribute, None)
            self._bound.clear()
            for source in sources:
                try:
                    source.close()
                except Exception:
                    logger.warning("could not close %r; dropping it", source, exc_info=True)
            if change is not None:
                change()
