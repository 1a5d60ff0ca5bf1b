"""The slow-path events of idfields: a hook that costs the hot path nothing.

The generators and the lease source :func:`emit` an event on their slow paths only (a new node,
a renewal, a wait for the clock), never per ID; with no subscriber :func:`emit` returns after one
tuple test. It sits below every layer that emits, so that the generators and the node sources
report without importing :mod:`idfields.metrics`, which reads them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

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
