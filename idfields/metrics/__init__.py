"""What idfields reports about itself: events on slow paths, and counters read when asked.

Two ways in, neither costing the hot path anything:

- :func:`subscribe` a callback ``(event, value, attributes)``; it is called from the slow paths
  only (a new node, a renewal, a wait for the clock), never per ID. With no subscriber
  :func:`emit` returns after one tuple test.
- :func:`generator_stats` reads every live generator's counters (IDs issued, run-ahead of the
  clock) at the moment it is called: a scrape, not a stream.

``idfields.metrics.otel.instrument()`` maps both onto OpenTelemetry instruments.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from idfields.layouts import Layout

logger = logging.getLogger("idfields.metrics")

#: Every event :func:`emit` sends, with what its value measures.
EVENTS: Mapping[str, str] = {
    "lease.claimed": "seconds the claim took (attributes: layout, node, reclaimed)",
    "lease.renewed": "seconds the renewal took (attributes: layout, node)",
    "lease.lost": "1: another process holds the node now (attributes: layout, node)",
    "lease.failed": "1: a claim or renewal failed on a database error (attributes: layout)",
    "clock.wait": "seconds slept waiting for the clock (attributes: layout)",
    "clock.backwards": "seconds the clock was behind the last ID issued (attributes: layout)",
}

Listener = Callable[[str, float, Mapping[str, str]], None]

_listeners: tuple[Listener, ...] = ()


def subscribe(listener: Listener) -> Callable[[], None]:
    """Call ``listener`` for every event from now on; returns the function that unsubscribes."""
    global _listeners
    _listeners = (*_listeners, listener)

    def unsubscribe() -> None:
        global _listeners
        _listeners = tuple(x for x in _listeners if x is not listener)

    return unsubscribe


def emit(event: str, value: float = 1.0, **attributes: str) -> None:
    """Send ``event`` to every subscriber; a failing subscriber is logged, never raised."""
    if not _listeners:
        return
    for listener in _listeners:
        try:
            listener(event, value, attributes)
        except Exception:  # a broken metrics backend must never cost an ID
            logger.warning(
                "idfields metrics listener %r failed on %s", listener, event, exc_info=True
            )


@dataclass(frozen=True)
class GeneratorStats:
    """One live generator at the moment of reading."""

    layout: str  # the layout's lease key: its name, with a fingerprint for user layouts
    node: str
    issued: int  # IDs issued since the generator was made
    run_ahead_s: float  # how far its last ID's time is ahead of the clock (0 when behind)


def live_layouts() -> list[Layout]:
    """The layouts of every live generator in this process."""
    from idfields.generators.base import live_generators  # the generators import this module

    return list({id(g.layout): g.layout for g in list(live_generators)}.values())


def generator_stats() -> list[GeneratorStats]:
    """Counters of every live generator in this process (those that issued at least once)."""
    from idfields.generators.base import live_generators  # the generators import this module

    stats: list[GeneratorStats] = []
    for generator in list(live_generators):
        with contextlib.suppress(ReferenceError):
            reading = generator.stats()
            if reading is not None:
                stats.append(reading)
    return stats
