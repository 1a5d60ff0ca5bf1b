"""The hot paths of the generators: the pure-Python reference, or the compiled one when built.

``idfields._speedups`` (C, built by ``setup.py`` when a compiler is present; loaded where the
kernel wipes a page on fork, which it reads as the pure core reads ``live``) has a
``CounterCore`` and a ``TimeCore`` that mirror :class:`PureCounterCore` and :class:`PureTimeCore`
exactly: the same counters, the same decisions, the same IDs for the same clock and state; the
tests run both. ``IDFIELDS_PURE_PYTHON=1`` forces the reference.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from idfields._forking import live


class PureCounterCore:
    """Issue the next ID of the current block under the lock; leave the rest to the slow path
    (a used-up block, a node to take, a closed or forked generator: ``_left`` is 0 then).

    A fork that ran no hook of Python (fork(2) from C) leaves the parent's state here: the page
    ``live`` says so (see ``idfields._forking``), read twice. Before the lock, since a lock some
    thread of the parent held is never released in the child; and between the last call and the
    state change, where no signal handler can run: one that forks there (from C or Python)
    would give the child the parent's very ID.
    """

    _lock: threading.Lock
    _left: int
    _id: int
    _step: int
    _busy: int
    _locked_issue: Callable[[], int]  # the slow path, defined by IdGenerator

    def __call__(self) -> int:
        if not live[()]:
            return self._locked_issue()
        with self._lock:  # never acquire() then try: a signal handler may raise in between
            if self._left and live[()]:
                self._left -= 1
                self._id = issued = self._id + self._step
                return issued
        return self._locked_issue()


class PureTimeCore(PureCounterCore):
    """Issue the next ID of the current tick under the lock; leave the rest to the slow path.

    The current tick is still usable while the clock reads inside ``[_floor_ns, _end_ns)``
    (the tick itself, or up to ``max_skew`` before it): the same decision as the compiled
    core's ``tick <= _tick and tick + _skew_ticks >= _tick``, without the division. The
    compiled core also starts a new tick inline; here the slow path does, to the same effect.
    """

    _clock: Callable[[], int]
    _tick: int
    _epoch_ns: int
    _unit_ns: int
    _skew_ticks: int
    _limit_tick: int
    _node_base: int
    _modulus: int
    _tick_mul: int
    _per_block: int
    _floor_ns: int
    _end_ns: int

    def __call__(self) -> int:
        # The window test replaces tick maths; the clock as a local: ``self._clock()`` is a
        # method lookup that does not specialise.
        if not live[()]:
            return self._locked_issue()
        clock = self._clock
        with self._lock:  # never acquire() then try: a signal handler may raise in between
            if self._left and self._floor_ns <= clock() < self._end_ns and live[()]:
                self._left -= 1
                self._id = issued = self._id + self._step
                return issued
        return self._locked_issue()


def _pure_forced() -> bool:
    return os.environ.get("IDFIELDS_PURE_PYTHON", "").strip() in {"1", "true", "yes"}


def compiled(name: str) -> type | None:
    """The compiled type ``name`` of ``idfields._speedups``; None when pure Python is in force,
    the extension is not built, or it was built before ``name`` existed (or, for the cores, the
    kernel wipes no page on fork: they need it to see every fork)."""
    if _pure_forced():
        return None
    try:
        from idfields import _speedups
    except ImportError:
        return None
    found: type | None = getattr(_speedups, name, None)
    return found


def _compiled() -> tuple[type, type] | None:
    counter, timed = compiled("CounterCore"), compiled("TimeCore")
    if counter is None or timed is None:  # no wiped page, or built before CounterCore
        return None
    return counter, timed


class _SlottedCounterCore(PureCounterCore):
    """:class:`PureCounterCore` with its hot state in slots: a generator has more attributes
    than an instance dict shares keys for (30), so without them every read is a hashed lookup."""

    __slots__ = ("_id", "_left", "_lock", "_step")


class _SlottedTimeCore(PureTimeCore):
    """:class:`PureTimeCore` with its hot state in slots; see :class:`_SlottedCounterCore`."""

    __slots__ = ("_clock", "_end_ns", "_floor_ns", "_id", "_left", "_lock", "_step")


if TYPE_CHECKING:
    CounterCore = PureCounterCore
    TimeCore = PureTimeCore
else:
    CounterCore, TimeCore = _compiled() or (_SlottedCounterCore, _SlottedTimeCore)

COMPILED = TimeCore is not _SlottedTimeCore


class CoreStatus(NamedTuple):
    """Which hot path this process runs, and why: for ``idfields --version`` and Django's
    check ``idfields.I001``, since the pure-Python one is several times slower per ID."""

    compiled: bool
    reason: str

    def __str__(self) -> str:
        return f"{'compiled' if self.compiled else 'pure-Python'} core: {self.reason}"


def core_status() -> CoreStatus:
    """The hot path the generators made in this process use, with the reason it was chosen."""
    if COMPILED:
        return CoreStatus(True, "idfields._speedups (C) is built and loaded")
    if _pure_forced():
        return CoreStatus(False, "IDFIELDS_PURE_PYTHON is set in the environment")
    if sys.implementation.name != "cpython" or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return CoreStatus(
            False, f"the C core is built for GIL CPython only, this is {_interpreter()}"
        )
    if not isinstance(live, memoryview):
        return CoreStatus(
            False,
            "this kernel wipes no page on fork (MADV_WIPEONFORK, Linux 4.14+), which the "
            "compiled core needs to see a fork made below Python",
        )
    if importlib.util.find_spec("idfields._speedups") is None:
        return CoreStatus(
            False,
            "idfields._speedups was not built at install (no C compiler or Python headers); "
            "install gcc and the python3-dev headers, then reinstall idfields from source",
        )
    return CoreStatus(
        False, "idfields._speedups is older than this idfields; reinstall idfields to rebuild it"
    )


def _interpreter() -> str:
    threaded = " (free-threaded)" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""
    return f"{sys.implementation.name}{threaded}"
