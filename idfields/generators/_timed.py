"""TimeGenerator: IDs from a timestamp, the node and a per-tick sequence.

Its issued time is monotonic and anchored to the wall clock: when the clock steps back, or a
tick's sequence runs out, it keeps counting in later ticks, running ahead of the clock by at most
``max_skew``; beyond that it waits for the clock, at most ``max_wait`` in one call, then raises
:class:`ClockMovedBackwards`. It never returns None. Leased nodes are fenced: it issues only
timestamps after the lease's ``not_before_ns`` and never past its ``valid_until_ns``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from idfields._events import emit
from idfields.errors import (
    ClockMovedBackwards,
    LayoutExhausted,
    NodeError,
    ValueOutOfRange,
    WrongArgumentType,
)
from idfields.generators._base import IdGenerator
from idfields.generators._hotpath import TimeCore
from idfields.layouts import Layout
from idfields.nodes import Assignment, NodeSource

Clock = Callable[[], int]
Sleep = Callable[[float], None]

DEFAULT_MAX_SKEW_NS = 1_000_000_000
NO_LIMIT = (1 << 63) - 1


def _whole_ns(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueOutOfRange(f"{name} must be a whole number of ns >= 0, got {value!r}")
    return value


class TimeGenerator(TimeCore, IdGenerator):
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
            raise WrongArgumentType(
                f"layout {self.layout.name!r} has no timestamp; use CounterGenerator"
            )
        max_skew_ns = _whole_ns("max_skew_ns", max_skew_ns)
        max_wait_ns = max_skew_ns if max_wait_ns is None else _whole_ns("max_wait_ns", max_wait_ns)
        self._clock = clock
        self._sleep = sleep
        geometry = self.layout.geometry
        self._epoch_ns, self._unit_ns = geometry.epoch_ns, geometry.unit_ns
        self._tick_mul, self._modulus = geometry.tick_multiplier, geometry.modulus
        self._max_tick = NO_LIMIT if geometry.max_tick is None else geometry.max_tick
        self._renew_tick = self._expiry_tick = self._max_tick
        self._renew_error: Exception | None = None
        self._skew_ticks = max_skew_ns // self._unit_ns
        self._max_wait_ns = max_wait_ns
        self._tick = -1  # no tick issued yet (``_mark_stale`` left _limit_tick below it)

    def _now_tick(self) -> int:
        return (self._clock() - self._epoch_ns) // self._unit_ns

    def _ensure_room(self, wanted: int, waited_ns: int) -> int:
        tick = self._now_tick()
        if self._stale:  # first use, after fork, close or an interrupted claim
            self._assign()
        if tick > self._tick:
            self._begin(tick)
        elif not self._room() or tick + self._skew_ticks < self._tick:
            return self._make_room(tick, wanted, waited_ns)
        return 0

    def _begin(self, tick: int) -> None:
        if tick > self._limit_tick:
            tick = self._check_limits(tick)
        self._tick = tick
        self._open(self._node_base + (tick % self._modulus) * self._tick_mul, self._per_block)

    def _check_limits(self, tick: int) -> int:
        """Once a tick passes a limit: the layout's end, or the lease's renewal time or expiry
        (invariant L1 of docs/explanation/lease-protocol.md)."""
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
            try:
                fence = self._assign().not_before_ns
            except BaseException:  # no node now: the next call asks the source again
                self._mark_stale()
                raise
            return max(tick, self.layout.tick_of(fence) + 1)
        except Exception as error:  # unreachable coordinator: go on until expiry, retry later
            self._renew_error = error
            self._renew_tick = tick + max(1, 1_000_000_000 // self._unit_ns)
            self._limit_tick = min(self._max_tick, self._renew_tick, self._expiry_tick)
            return tick
        self._apply_window(renew_after_ns, valid_until_ns)
        return tick

    def _accept(self, assignment: Assignment) -> None:
        """The lease's window, and the fence: no tick at or before ``not_before_ns``, nor
        before a tick this generator issued (its IDs only increase, whatever the node)."""
        fence = assignment.not_before_ns
        if fence:
            self._tick = max(self._tick, self.layout.tick_of(fence))  # only ever grows
        self._apply_window(assignment.renew_after_ns, assignment.valid_until_ns)  # last

    def _apply_window(self, renew_after_ns: int | None, valid_until_ns: int | None) -> None:
        tick_of = self.layout.tick_of
        renew_tick = NO_LIMIT if renew_after_ns is None else tick_of(renew_after_ns)
        expiry_tick = NO_LIMIT if valid_until_ns is None else tick_of(valid_until_ns)
        limit_tick = min(self._max_tick, renew_tick, expiry_tick)
        # No call from here on, the limit last: an interrupt never leaves half a window.
        self._renew_tick, self._expiry_tick = renew_tick, expiry_tick
        self._limit_tick = limit_tick
        self._renew_error = None

    def _issued_until_ns(self) -> int:
        if self._tick < 0:
            return time.time_ns()
        return self._epoch_ns + (self._tick + 1) * self._unit_ns - 1  # the last ns of the tick

    def _run_ahead_s(self) -> float:
        if self._tick < 0:
            return 0.0
        ahead_ns = self._epoch_ns + self._tick * self._unit_ns - self._clock()
        return max(ahead_ns, 0) / 1e9

    def _make_room(self, now_tick: int, wanted: int, waited_ns: int) -> int:
        """The slow path: run ahead within the skew bound, or say how long to wait, or raise.
        After a wait the caller comes back with the clock read afresh: meanwhile other threads
        went on."""
        room = self._room()
        if not waited_ns and room and now_tick < self._tick:
            behind_s = (self._tick - now_tick) * self._unit_ns / 1e9
            emit("clock.backwards", behind_s, layout=self.layout.lease_key)
        target = self._tick if room else self._tick + 1
        if target - now_tick <= self._skew_ticks:
            if target != self._tick:
                self._begin(target)
            return 0
        return self._wait_for(target, now_tick, wanted, waited_ns)

    def _wait_for(self, target: int, now_tick: int, wanted: int, waited_ns: int) -> int:
        """How long to wait (lock released) until ``target`` is within the skew bound, batched
        for ``take()``; what one call waits in total stays within ``max_wait``, so a stuck
        clock raises instead of hanging."""
        behind = target - self._skew_ticks - now_tick
        budget_ns = self._max_wait_ns - waited_ns
        if behind * self._unit_ns > budget_ns:
            raise ClockMovedBackwards(
                f"the clock is {(target - now_tick) * self._unit_ns / 1e9:.3f} s behind the "
                f"last ID issued by layout {self.layout.name!r} node {self.node}; idfields runs "
                f"ahead at most {self._skew_ticks * self._unit_ns / 1e9:.3f} s (max_skew) and "
                f"waits at most {self._max_wait_ns / 1e9:.3f} s (max_wait). No ID was issued: "
                "fix the host clock (NTP) or retry once it has caught up"
            )
        batch = min(-(-wanted // self._per_block), max(self._skew_ticks // 2, 1))
        wait_ns = min((max(behind, batch) if behind <= 1 else behind) * self._unit_ns, budget_ns)
        emit("clock.wait", wait_ns / 1e9, layout=self.layout.lease_key)
        return wait_ns

    def _mark_stale(self) -> None:
        super()._mark_stale()
        self._limit_tick = -1  # below every tick: the compiled core starts no tick inline
