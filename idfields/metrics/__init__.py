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

from idfields._events import EVENTS, Listener, subscribe
from idfields.generators._base import GeneratorStats, live_generators
from idfields.layouts import Layout

__all__ = [
    "EVENTS",
    "GeneratorStats",
    "Listener",
    "generator_stats",
    "live_layouts",
    "subscribe",
]


def live_layouts() -> list[Layout]:
    """The layouts of every live generator in this process."""
    return list({id(g.layout): g.layout for g in list(live_generators)}.values())


def generator_stats() -> list[GeneratorStats]:
    """Counters of every live generator in this process (those that issued at least once)."""
    stats: list[GeneratorStats] = []
    for generator in list(live_generators):
        with contextlib.suppress(ReferenceError):
            reading = generator.stats()
            if reading is not None:
                stats.append(reading)
    return stats
