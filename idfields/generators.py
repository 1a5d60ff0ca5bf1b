"""Generators: turn (clock, node, sequence) into strictly increasing IDs, and never repeat one.

Two kinds, chosen by the layout:

- :class:`TimeGenerator` for layouts with a timestamp. Its issued time is monotonic, anchored to
  the wall clock: when the clock steps back, or a tick's sequence runs out, it keeps counting in
  later ticks, running ahead of the clock by at most ``max_skew``; beyond that it waits for the
  clock, at most ``max_wait``, then raises :class:`ClockMovedBackwards`. It never returns None.
- :class:`CounterGenerator` for layouts without one (DecimalId, runid): a counter inside a block
  named by the node fields (generator_id + launch_id, run id); a used-up block is replaced by a
  fresh one from the node source.

Both are thread-safe (one lock; the hot path is a handful of integer operations) and fork-safe:
``os.register_at_fork`` marks every live generator stale in the child, whose next call takes new
node values from its source, or raises if the source cannot give any (a static node).
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from idfields.errors import ClockMovedBackwards, LayoutExhausted, NodeError, ValueOutOfRange
from idfields.layouts import Constant, Layout, get_layout
from idfields.nodes import Assignment, NodeSource, StaticNode, default_source, validate_values

Clock = Callable[[], int]
Sleep = Callable[[float], None]

DEFAULT_MAX_SKEW_NS = 1_000_000_000
_STALE_TICK = 1 << 80  # larger than any tick: sends the next call down the slow path
_NO_LIMIT = 1 << 81
_MAX_TAKE = 10_000_000

_live: weakref.WeakSet[IdGenerator] = weakref.WeakSet()


class IdGenerator:
    """What both kinds share: the layout, the node source and its assignment, lock, fork safety."""

    _left: int  # IDs left in the current tick or block
    _id: int  # the last ID issued (or the first of the tick/block minus one step)
    _step: int  # distance between consecutive IDs of one tick/block

    def __init__(
        self, layout: str | Layout, source: NodeSource | None = None, *, node: int | None = None
    ) -> None:
        if source is not None and node is not None:
            raise TypeError("pass either node= or source=, not both")
        self.layout = get_layout(layout)
        self._source = source
        if node is not None:
            static = StaticNode(node)
            static.values_for(self.layout)  # a misconfigured node fails here, not at first use
            self._source = static
        self._lock = threading.Lock()
        self._assignment: Assignment | None = None
        self._stale = True
        self._left = 0
        self._id = 0
        sequence = self.layout.sequence
        self._per_block = sequence.size if sequence else 1
        self._step = sequence.multiplier if sequence else 1
        self._constants = sum(
            p.spec.value * p.multiplier for p in self.layout.placed if isinstance(p.spec, Constant)
        ) + (sequence.minimum * sequence.multiplier if sequence else 0)
        self._node_base = 0
        _live.add(self)

    def __repr__(self) -> str:
        node = dict(self._assignment.values) if self._assignment else "unassigned"
        return f"<{type(self).__name__} {self.layout.name} node={node}>"

    @property
    def node(self) -> dict[str, int] | None:
        """The node values in use, or None before the first ID."""
        return dict(self._assignment.values) if self._assignment else None

    def __call__(self) -> int:
        raise NotImplementedError

    def next(self) -> int:
        """The next ID (same as calling the generator)."""
        return self()

    def take(self, count: int) -> list[int]:
        """Reserve ``count`` IDs at once, in increasing order, at the layout's full capacity."""
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= _MAX_TAKE:
            raise ValueOutOfRange(f"take() needs a count in 0..{_MAX_TAKE}, got {count!r}")
        ids: list[int] = []
        step = self._step
        with self._lock:
            while count:
                self._ensure_room(count)
                chunk = min(count, self._left)
                first = self._id + step
                self._id += chunk * step
                self._left -= chunk
                ids.extend(range(first, self._id + 1, step))
                count -= chunk
        return ids

    def _ensure_room(self, wanted: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Give the node back to its source (a lease is released; fixed nodes ignore it)."""
        with self._lock:
            self._drop_assignment()
            self._stale = True
            self._left = 0

    def _drop_assignment(self) -> None:
        assignment, self._assignment = self._assignment, None
        if assignment is not None and assignment.release is not None:
            assignment.release(self._issued_until_ns())

    def _issued_until_ns(self) -> int:
        """A time no ID of this generator is later than (for fencing the node's next holder)."""
        return time.time_ns()

    def _assign(self) -> Assignment:
        """Take fresh node values from the source; the source raises when it has none."""
        self._drop_assignment()
        source = self._source
        if source is None:
            source = self._source = default_source(self.layout)
        assignment = source.acquire(self.layout)
        values = validate_values(self.layout, assignment.values, repr(source))
        self._node_base = self._constants + sum(
            value * self.layout[name].multiplier for name, value in values.items()
        )
        self._assignment = assignment
        self._stale = False
        return assignment

    def _forked(self) -> None:
        """In a child after fork: new lock, and the parent's node must not be used again."""
        self._lock = threading.Lock()
        self._assignment = None  # the parent's; never released from here
        self._stale = True
        self._left = 0

    def decode(self, value: int) -> dict[str, Any]:
        return self.layout.decode(value).to_dict()


class TimeGenerator(IdGenerator):
    """IDs from a timestamp, the node and a per-tick sequence; see the module docstring."""

    def __init__(
        self,
        layout: str | Layout,
        source: NodeSource | None = None,
        *,
        node: int | None = None,
        clock: Clock = time.time_ns,
        sleep: Sleep = time.sleep,
        max_skew_ns: int = DEFAULT_MAX_SKEW_NS,
        max_wait_ns: int | None = None,
    ) -> None:
        super().__init__(layout, source, node=node)
        stamp = self.layout.timestamp
        if stamp is None:
            raise TypeError(f"layout {self.layout.name!r} has no timestamp; use CounterGenerator")
        if max_skew_ns < 0:
            raise ValueOutOfRange(f"max_skew_ns must be >= 0, got {max_skew_ns}")
        self._clock = clock
        self._sleep = sleep
        self._epoch_ns = self.layout.epoch_ns
        self._unit_ns = self.layout.unit_ns
        self._tick_mul = stamp.multiplier
        self._modulus = stamp.radix
        self._max_tick = _NO_LIMIT if self.layout.wraps else stamp.maximum
        self._renew_tick = self._expiry_tick = self._limit_tick = self._max_tick
        self._renew_error: Exception | None = None
        self._skew_ticks = max_skew_ns // self._unit_ns
        self._max_wait_ns = max_skew_ns if max_wait_ns is None else max_wait_ns
        self._tick = _STALE_TICK

    def __call__(self) -> int:
        with self._lock:
            tick = (self._clock() - self._epoch_ns) // self._unit_ns
            if tick > self._tick:
                self._begin(tick)
            elif not self._left or tick + self._skew_ticks < self._tick:
                self._make_room(tick, 1)
            self._left -= 1
            self._id += self._step
            return self._id

    def _ensure_room(self, wanted: int) -> None:
        tick = (self._clock() - self._epoch_ns) // self._unit_ns
        if tick > self._tick:
            self._begin(tick)
        elif not self._left or tick + self._skew_ticks < self._tick:
            self._make_room(tick, wanted)

    def _begin(self, tick: int) -> None:
        if tick > self._limit_tick:
            tick = self._check_limits(tick)
        self._tick = tick
        self._left = self._per_block
        self._id = self._node_base + (tick % self._modulus) * self._tick_mul - self._step

    def _check_limits(self, tick: int) -> int:
        """Once a tick passes a limit: the layout's end, or the lease's renewal time or expiry."""
        if tick > self._max_tick:
            raise LayoutExhausted(
                f"layout {self.layout.name!r} ran out of timestamps on "
                f"{self.layout.runs_out_text}; no ID was issued. Move the column to a layout "
                "with a later epoch or a wider timestamp"
            )
        if tick > self._renew_tick:
            tick = self._renew_lease(tick)
        if tick > self._expiry_tick:
            raise NodeError(
                f"the lease on node {self.node} of layout {self.layout.name!r} expired and "
                f"could not be renewed ({self._renew_error!r}); no ID was issued. Check the "
                "database connection of the node source"
            )
        return tick

    def _renew_lease(self, tick: int) -> int:
        assignment = self._assignment
        if assignment is None or assignment.renew is None:
            return tick
        try:
            renew_after_ns, valid_until_ns = assignment.renew()
        except NodeError:  # lost: another process holds the node now; take another one
            fence = self.layout.tick_of(self._assign().not_before_ns)
            return max(tick, fence + 1)
        except Exception as error:  # unreachable coordinator: go on until expiry, retry later
            self._renew_error = error
            self._renew_tick = tick + max(1, 1_000_000_000 // self._unit_ns)
            self._limit_tick = min(self._max_tick, self._renew_tick, self._expiry_tick)
            return tick
        self._apply_window(renew_after_ns, valid_until_ns)
        return tick

    def _assign(self) -> Assignment:
        assignment = super()._assign()
        self._apply_window(assignment.renew_after_ns, assignment.valid_until_ns)
        return assignment

    def _apply_window(self, renew_after_ns: int | None, valid_until_ns: int | None) -> None:
        tick_of = self.layout.tick_of
        self._renew_tick = _NO_LIMIT if renew_after_ns is None else tick_of(renew_after_ns)
        self._expiry_tick = _NO_LIMIT if valid_until_ns is None else tick_of(valid_until_ns)
        self._limit_tick = min(self._max_tick, self._renew_tick, self._expiry_tick)
        self._renew_error = None

    def _issued_until_ns(self) -> int:
        if self._tick == _STALE_TICK:
            return time.time_ns()
        return self._epoch_ns + (self._tick + 1) * self._unit_ns

    def _make_room(self, now_tick: int, wanted: int) -> None:
        """The slow path: assign a node, run ahead within the skew bound, wait, or raise."""
        if self._stale:
            fence = self._assign().not_before_ns
            self._tick = max(0, self.layout.tick_of(fence)) if fence else 0
            self._left = 0
        waited_ns = 0
        while True:
            if now_tick > self._tick:
                self._begin(now_tick)
                return
            target = self._tick if self._left else self._tick + 1
            if target - now_tick <= self._skew_ticks:
                if target != self._tick:
                    self._begin(target)
                return
            waited_ns += self._wait_for(target, now_tick, wanted, waited_ns)
            now_tick = (self._clock() - self._epoch_ns) // self._unit_ns

    def _wait_for(self, target: int, now_tick: int, wanted: int, waited_ns: int) -> int:
        """Sleep until ``target`` is within the skew bound (batched for ``take()``); the total
        wait of one call is bounded by ``max_wait``, so a stuck clock raises instead of hanging."""
        behind = target - self._skew_ticks - now_tick
        batch = min(-(-wanted // self._per_block), max(self._skew_ticks // 2, 1))
        wait_ns = max(behind, batch) * self._unit_ns if behind <= 1 else behind * self._unit_ns
        if waited_ns + behind * self._unit_ns > self._max_wait_ns:
            raise ClockMovedBackwards(
                f"the clock is {(target - now_tick) * self._unit_ns / 1e9:.3f} s behind the "
                f"last ID issued by layout {self.layout.name!r} node {self.node}; idfields runs "
                f"ahead at most {self._skew_ticks * self._unit_ns / 1e9:.3f} s (max_skew) and "
                f"waits at most {self._max_wait_ns / 1e9:.3f} s (max_wait). No ID was issued: "
                "fix the host clock (NTP) or retry once it has caught up"
            )
        self._sleep(wait_ns / 1e9)
        return wait_ns

    def _forked(self) -> None:
        super()._forked()
        self._tick = _STALE_TICK


class CounterGenerator(IdGenerator):
    """IDs from a counter within a block named by the node fields (DecimalId, runid)."""

    def __init__(
        self, layout: str | Layout, source: NodeSource | None = None, *, node: int | None = None
    ) -> None:
        super().__init__(layout, source, node=node)
        if self.layout.timestamp is not None:
            raise TypeError(f"layout {self.layout.name!r} has a timestamp; use TimeGenerator")

    def __call__(self) -> int:
        with self._lock:
            if not self._left:
                self._renew()
            self._left -= 1
            self._id += self._step
            return self._id

    def _ensure_room(self, wanted: int) -> None:
        if not self._left:
            self._renew()

    def _renew(self) -> None:
        """A fresh block: at first use, after fork, and when the counter is used up."""
        self._assign()
        self._left = self._per_block
        self._id = self._node_base - self._step


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
    """
    resolved = get_layout(layout)
    if resolved.timestamp is not None:
        return TimeGenerator(resolved, source, node=node, **options)
    if options:
        raise TypeError(f"layout {resolved.name!r} has no clock; {sorted(options)} do not apply")
    return CounterGenerator(resolved, source, node=node)


def _after_fork_in_child() -> None:
    for generator in list(_live):
        generator._forked()


def _close_all() -> None:
    """At a clean exit, give leased nodes back so restarts never exhaust the node space."""
    for generator in list(_live):
        generator.close()


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_close_all)
