"""The hot path of TimeGenerator: the pure-Python reference, or the compiled one when built.

``idfields._speedups.TimeCore`` (C, built by ``setup.py`` when a compiler is present) mirrors
:class:`PureTimeCore` exactly: the same counters, the same decisions, the same IDs for the same
clock and state; the tests run both. ``IDFIELDS_PURE_PYTHON=1`` forces the reference.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING


class PureTimeCore:
    """Issue the next ID of the current tick under the lock; leave the rest to the slow path.

    The current tick is still usable while the clock reads inside ``[_floor_ns, _end_ns)``
    (the tick itself, or up to ``max_skew`` before it): the same decision as the compiled
    core's ``tick <= _tick and tick + _skew_ticks >= _tick``, without the division. The
    compiled core also starts a new tick inline; here the slow path does, to the same effect.
    """

    _lock: threading.Lock
    _clock: Callable[[], int]
    _tick: int
    _left: int
    _id: int
    _step: int
    _epoch_ns: int
    _unit_ns: int
    _skew_ticks: int
    _limit_tick: int
    _node_base: int
    _modulus: int
    _tick_mul: int
    _per_block: int
    _busy: int
    _floor_ns: int
    _end_ns: int
    _locked_issue: Callable[[], int]  # the slow path, defined by TimeGenerator

    def __call__(self) -> int:
        # acquire/release: cheaper than ``with`` on 3.11; the window test replaces tick maths.
        lock = self._lock
        lock.acquire()
        try:
            if self._left and self._floor_ns <= self._clock() < self._end_ns:
                self._left -= 1
                self._id += self._step
                return self._id
        finally:
            lock.release()
        return self._locked_issue()


def compiled(name: str) -> type | None:
    """The compiled type ``name`` of ``idfields._speedups``; None when pure Python is in force."""
    if os.environ.get("IDFIELDS_PURE_PYTHON", "").strip() in {"1", "true", "yes"}:
        return None
    try:
        from idfields import _speedups
    except ImportError:
        return None
    found: type | None = getattr(_speedups, name, None)
    return found


if TYPE_CHECKING:
    TimeCore = PureTimeCore
else:
    TimeCore = compiled("TimeCore") or PureTimeCore

COMPILED = TimeCore is not PureTimeCore
