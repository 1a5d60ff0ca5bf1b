"""The hot paths of the generators: the pure-Python reference, or the compiled one when built.

``idfields._speedups`` (C, built by ``setup.py`` when a compiler is present; loaded where the
kernel wipes a page on fork, which it reads as the pure core reads ``live``) has a
``CounterCore`` and a ``TimeCore`` that mirror :class:`PureCounterCore` and :class:`PureTimeCore`
exactly: the same decisions, the same IDs for the same clock and state (the compiled ones count
a block down under the GIL, the pure ones draw from it without a lock); the tests run both.
``IDFIELDS_PURE_PYTHON=1`` forces the reference.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from operator import length_hint
from typing import TYPE_CHECKING, Any, NamedTuple

from idfields._forking import live

_NOTHING: Iterator[int] = iter(())  # an empty block: every call goes to the slow path


class PureCounterCore:
    """Draw the next ID of the current block without a lock; leave the rest to the slow path
    (a used-up block, a node to take, a closed or forked generator: the block is empty then).

    The block is an iterator over its IDs, which the slow path publishes in one store and draws
    from too, under the lock. A draw from a range iterator (``for``: no call, so no signal
    handler runs between it and the return) is one step of C under the GIL, so each ID is
    drawn once, by one thread, however they interleave; a block the slow path
    replaced is never published again, so an ID a late thread draws from it is unique too. That
    needs the GIL: see :data:`ATOMIC_DRAWS`.

    A fork that ran no hook of Python (fork(2) from C) leaves the parent's block here: the page
    ``live`` says so (see ``idfields._forking``), read after the draw and before the return,
    where no signal handler can run: one that forks earlier leaves a child that reads it false
    (or, after Python's fork, whose hooks emptied the block before it draws).
    """

    _ids: Iterator[int]
    _issued: int
    _block: int
    _step: int
    _locked_issue: Callable[[], int]  # the slow path, defined by IdGenerator

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._publish(_NOTHING)  # before IdGenerator's __init__, which counts the empty block
        super().__init__(*args, **kwargs)

    def __call__(self) -> int:
        for issued in self._ids:  # one step, no call: no signal handler runs before the return
            if live[()]:
                return issued
            break
        return self._locked_issue()

    def _room(self) -> int:
        return length_hint(self._ids)  # exact for a range iterator, at this moment

    def _draw(self, count: int) -> Iterable[int]:
        return list(islice(self._ids, count))  # fewer when hot calls drew the rest meanwhile

    def _open(self, first: int, size: int) -> None:
        issued = self._issued + self._block - self._room()
        step = self._step
        self._publish(iter(range(first, first + size * step, step)) if size else _NOTHING)
        self._issued, self._block = issued, size  # no call since the publish returned

    def _publish(self, ids: Iterator[int]) -> None:
        self._ids = ids


class PureTimeCore(PureCounterCore):
    """Draw the next ID of the current tick without a lock, while the clock reads inside the
    tick's window ``[floor, end)`` (the tick itself, or up to ``max_skew`` before it): the same
    decision as the compiled core's ``tick <= _tick and tick + _skew_ticks >= _tick``, without
    the division. The block and its window are one tuple, published in one store. The compiled
    core also starts a new tick inline; here the slow path does, to the same effect.
    """

    _window: tuple[Iterator[int], int, int]
    _clock: Callable[[], int]
    _tick: int
    _epoch_ns: int
    _unit_ns: int
    _skew_ticks: int

    def __call__(self) -> int:
        # The clock first, the window after it: a clock that forks (or a signal handler run on
        # its return) leaves a child whose hooks replaced the window, or whose ``live`` reads
        # false. From the window on, no call until the return.
        now = self._clock()
        ids, floor_ns, end_ns = self._window
        if floor_ns <= now < end_ns:
            for issued in ids:  # see PureCounterCore.__call__
                if live[()]:
                    return issued
                break
        return self._locked_issue()

    def _publish(self, ids: Iterator[int]) -> None:
        floor_ns = end_ns = 0  # an empty block has no window
        if ids is not _NOTHING:
            floor_ns = self._epoch_ns + (self._tick - self._skew_ticks) * self._unit_ns
            end_ns = self._epoch_ns + (self._tick + 1) * self._unit_ns
        self._ids = ids  # two stores, no call between
        self._window = (ids, floor_ns, end_ns)


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

    __slots__ = ("_ids",)


class _SlottedTimeCore(PureTimeCore):
    """:class:`PureTimeCore` with its hot state in slots; see :class:`_SlottedCounterCore`."""

    __slots__ = ("_clock", "_ids", "_window")


class _DrawUnderLock:
    """Every call through the slow path, which draws under the lock."""

    _locked_issue: Callable[[], int]

    def __call__(self) -> int:
        return self._locked_issue()


class _LockedCounterCore(_DrawUnderLock, _SlottedCounterCore):
    """:class:`PureCounterCore` where draws are not atomic (see :data:`ATOMIC_DRAWS`)."""


class _LockedTimeCore(_DrawUnderLock, _SlottedTimeCore):
    """:class:`PureTimeCore` where draws are not atomic (see :data:`ATOMIC_DRAWS`)."""


def _gil_enabled() -> bool:
    check: Callable[[], bool] | None = getattr(sys, "_is_gil_enabled", None)  # 3.13+
    return check() if check is not None else not sysconfig.get_config_var("Py_GIL_DISABLED")


ATOMIC_DRAWS = _gil_enabled()
"""Whether ``next()`` on an iterator two threads share runs as one step, which the lock-free
pure hot path relies on: true under the GIL (a C function holds it throughout). Free-threaded
CPython running without it gives no such promise, so there every pure call takes the lock."""

if TYPE_CHECKING:
    CounterCore = PureCounterCore
    TimeCore = PureTimeCore
else:
    CounterCore, TimeCore = _compiled() or (
        (_SlottedCounterCore, _SlottedTimeCore)
        if ATOMIC_DRAWS
        else (_LockedCounterCore, _LockedTimeCore)
    )

COMPILED = TimeCore not in (_SlottedTimeCore, _LockedTimeCore)


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
