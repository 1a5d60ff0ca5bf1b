"""Where a time-based layout puts its tick, sequence and fixed fields: computed once per layout,
for every generator that issues from a clock (``generators.timed``, ``hostshared``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TickGeometry:
    """The integers a clock-driven generator composes IDs from.

    An ID is ``fixed + node part + (tick % modulus) * tick_multiplier + index * step`` for the
    ``index``-th ID (0..ids_per_tick-1) of a tick.
    """

    epoch_ns: int  # unix ns of tick 0
    unit_ns: int  # ns per tick
    tick_multiplier: int  # where the timestamp sits in the ID
    modulus: int  # ticks before the timestamp field wraps (its radix)
    max_tick: int | None  # the last tick a non-wrapping timestamp holds; None when it wraps
    ids_per_tick: int  # per node
    step: int  # between consecutive IDs of one tick (the sequence's multiplier, or 1)
    fixed: int  # the constant fields and the sequence's minimum, composed

    def tick_of(self, unix_ns: int) -> int:
        """The (unwrapped) tick of a moment in ns since 1970."""
        return (unix_ns - self.epoch_ns) // self.unit_ns

    def skew_ticks(self, max_skew_ns: int) -> int:
        """Whole ticks a generator may run ahead of the clock within ``max_skew_ns``."""
        return max_skew_ns // self.unit_ns
