"""Generators: turn (clock, node, sequence) into strictly increasing IDs, and never repeat one.

Two kinds, chosen by the layout: :class:`TimeGenerator` for layouts with a timestamp,
:class:`CounterGenerator` for those without (DecimalId, runid). Both are thread-safe (one lock;
the hot path is a handful of integer operations, compiled when the C extension is built) and
fork-safe: the fork hook (``idfields._forking``) marks every live generator stale in the child,
whose next call takes new node values from its source, or raises if the source cannot give any
(a static node).
At a clean exit every generator gives its node back, so restarts never exhaust the node space.
"""

from __future__ import annotations

import atexit
from typing import Any

from idfields.errors import WrongArgumentType
from idfields.generators._base import IdGenerator, IdSource, live_generators
from idfields.generators._counter import CounterGenerator
from idfields.generators._hotpath import COMPILED
from idfields.generators._timed import DEFAULT_MAX_SKEW_NS, TimeGenerator
from idfields.layouts import Layout, get_layout
from idfields.nodes import NodeSource

__all__ = [
    "COMPILED",
    "DEFAULT_MAX_SKEW_NS",
    "CounterGenerator",
    "IdGenerator",
    "IdSource",
    "TimeGenerator",
    "make_generator",
]


def make_generator(
    layout: str | Layout = "snowflake",
    source: NodeSource | None = None,
    *,
    node: int | None = None,
    **options: Any,
) -> IdGenerator:
    """A generator for ``layout``: a TimeGenerator if it has a timestamp, else a CounterGenerator.

    ``node`` is a shortcut for ``StaticNode(node)``; with neither node nor source, the node comes
    from the environment (``IDFIELDS_NODE_ID``...) or development mode, else a clear error.
    Options of TimeGenerator: ``clock``, ``sleep``, ``max_skew_ns``, ``max_wait_ns``.
    """
    resolved = get_layout(layout)
    if resolved.timestamp is not None:
        return TimeGenerator(resolved, source, node=node, **options)
    if options:
        raise WrongArgumentType(
            f"layout {resolved.name!r} has no clock; {sorted(options)} do not apply"
        )
    return CounterGenerator(resolved, source, node=node)


def _close_all() -> None:
    for generator in list(live_generators):
        generator.close()


atexit.register(_close_all)
