"""What every generator shares: the layout, the node source and its assignment, the lock, and the
rules that make forks, close() and clean exits safe.

Ownership: a generator belongs to the process that created it, or that claimed a node for it
from a source serving many processes (a lease). A forked child's first call (the at-fork hook
marks every generator stale, so even the compiled hot path goes to the lock) claims anew from
such a source, and is refused when the node is fixed: it would continue the parent's sequence.
A fork from C runs no hook of Python: every path that issues or gives a node back first calls
``_forking.adopt()``, which runs the hooks then, and the hot paths see that fork by themselves
(see ``idfields._forking`` and ``_hotpath``). A copy or a pickle would be a second issuer of the
same node in one process: refused.

One lock discipline: every state change (issue past the hot path, take, close, node claims and
renewals) runs in :meth:`IdGenerator._changing`, which holds the lock and sets ``_busy``; that
sends the compiled hot path (it reads and writes the counters without the lock, atomically under
the GIL) to the lock as well. The pure-Python hot path takes no lock: it draws from the block the
slow path published (see ``_hotpath``). A wait for the clock happens between two changes,
outside the lock, so it never holds up other threads, close() or the fork hook.

The block: ``_open``, ``_room`` and ``_draw`` here work on the counters the compiled core reads
(``_left``, ``_id``); the pure core overrides them with an iterator it draws from.

Interrupts: a signal handler may raise (KeyboardInterrupt, Celery's soft time limit) wherever
Python checks for signals, that is on any call. So the lock is taken by a ``with`` statement
only, in the frame that runs the change: CPython checks for signals neither between the lock's
``__enter__`` and the protected block nor before its ``__exit__`` releases it, so no exception
leaves it held. What a hot path reads is changed by a run of stores with no call between
(a block, a window), so no interrupt leaves half of it. A node claim marks the generator stale
before it gives a node back or takes one, and clears that only once the node's limits and fence
are in place, so an interrupted claim is made again, never issued from half-made.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NoReturn, ParamSpec, Protocol, TypeVar, runtime_checkable

from idfields import _forking, shutdown
from idfields.errors import GeneratorClosed, ValueOutOfRange, WrongArgumentType
from idfields.layouts import Constant, Layout, get_layout
from idfields.nodes import (
    Assignment,
    FixedSource,
    NodeSource,
    StaticNode,
    default_source,
    forked_child_error,
    validate_values,
)

MAX_TAKE = 10_000_000
_NO_COPY = (
    "an ID generator cannot be copied or pickled: the copy would issue the same IDs as the "
    "original, on the same node. Share the one generator (it is thread-safe), or make one per "
    "process with make_generator() and a node source that gives each its own node (a lease)"
)

live_generators: weakref.WeakSet[IdGenerator] = weakref.WeakSet()
_P = ParamSpec("_P")
_T = TypeVar("_T")


def check_take_count(count: object) -> int:
    """The argument of every ``take()``: a whole number of IDs in 0..MAX_TAKE."""
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_TAKE:
        raise ValueOutOfRange(f"take() needs a count in 0..{MAX_TAKE}, got {count!r}")
    return count


@runtime_checkable
class IdSource(Protocol):
    """What the ORM layers need from an ID maker: ``source()``, ``source.take(n)``, its layout.

    :class:`IdGenerator`, ``idfields.redisid.RedisIdClient`` and
    ``idfields.hostshared.HostSharedGenerator`` all fit.
    """

    layout: Layout

    def __call__(self) -> int: ...

    def take(self, count: int) -> list[int]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class GeneratorStats:
    """One live generator at the moment of reading."""

    layout: str  # the layout's lease key: its name, with a fingerprint for user layouts
    node: str
    issued: int  # IDs issued since the generator was made
    run_ahead_s: float  # how far its last ID's time is ahead of the clock (0 when behind)


class IdGenerator:
    """A callable returning strictly increasing IDs of one layout; see ``idfields.generators``."""

    _left: int  # IDs left in the current tick or block
    _id: int  # the last ID issued (or the first of the tick/block minus one step)
    _step: int  # distance between consecutive IDs of one tick/block
    _per_block: int  # IDs per tick or block
    _node_base: int  # the node fields, constants and the sequence minimum, composed

    def __init__(
        self, layout: str | Layout, source: NodeSource | None = None, *, node: int | None = None
    ) -> None:
        if source is not None and node is not None:
            raise WrongArgumentType("pass either node= or source=, not both")
        self.layout = get_layout(layout)
        self._source = source
        if node is not None:
            static = StaticNode(node)
            static.values_for(self.layout)  # a misconfigured node fails here, not at first use
            self._source = static
        self._lock = threading.Lock()
        self._busy = 0
        self._sleep: Callable[[float], None] = time.sleep
        self._owner = _forking.process()
        self._closed = False
        self._assignment: Assignment | None = None
        sequence = self.layout.sequence
        self._per_block = sequence.size if sequence else 1
        self._step = sequence.multiplier if sequence else 1
        self._constants = sum(
            p.spec.value * p.multiplier for p in self.layout.placed if isinstance(p.spec, Constant)
        ) + (sequence.minimum * sequence.multiplier if sequence else 0)
        self._node_base = 0
        self._id = 0
        self._issued = self._block = self._left = 0
        self._closed = False
        self._mark_stale()
        live_generators.add(self)
        _forking.track(self)

    def __repr__(self) -> str:
        node = dict(self._assignment.values) if self._assignment else "unassigned"
        return f"<{type(self).__name__} {self.layout.name} node={node}>"

    @property
    def node(self) -> dict[str, int] | None:
        """The node values in use, or None before the first ID."""
        return dict(self._assignment.values) if self._assignment else None

    def __call__(self) -> int:
        raise NotImplementedError

    def take(self, count: int) -> list[int]:
        """Reserve ``count`` IDs at once, in increasing order, at the layout's full capacity."""
        return self._issue(check_take_count(count))

    _busy: int  # set while the lock holder changes state (the compiled hot path then waits)

    def _changing(self, change: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Run ``change`` holding the lock; see the module docstring for why it is this shape."""
        with self._lock:
            self._busy = 1
            try:
                return change(*args, **kwargs)
            finally:
                self._busy = 0

    def _locked_issue(self) -> int:
        """Either hot path's way out: any ID but the plain next one, under the lock. It decides
        afresh there: a hot path's view (and a time generator's clock reading, which
        ``_ensure_room`` takes again) is old once another thread let go of the lock."""
        return self._issue(1)[0]

    def _issue(self, count: int) -> list[int]:
        """``count`` IDs under the lock, with any waits for the clock between turns of it
        (``max_wait`` bounds each stretch of waiting without an ID issued)."""
        _forking.adopt()
        ids: list[int] = []
        waited_ns = 0
        while len(ids) < count:
            had = len(ids)
            wait_ns = self._changing(self._fill, ids, count, waited_ns)
            waited_ns = wait_ns if len(ids) > had else waited_ns + wait_ns
            if wait_ns:
                self._sleep(wait_ns / 1e9)
        return ids

    def _fill(self, ids: list[int], count: int, waited_ns: int) -> int:
        """Under the lock: issue into ``ids`` until it holds ``count``, or say how many ns to
        wait first (the caller waits with the lock released, then calls again)."""
        while len(ids) < count:
            wanted = count - len(ids)
            wait_ns = self._ensure_room(wanted, waited_ns)
            if wait_ns:
                return wait_ns
            ids.extend(self._draw(wanted))  # fewer when the pure hot path drew the rest
            waited_ns = 0
        return 0

    def _room(self) -> int:
        """IDs left in the current block."""
        return self._left

    def _draw(self, count: int) -> Iterable[int]:
        """Up to ``count`` IDs of the current block, in order."""
        step = self._step
        chunk = min(count, self._left)
        first = self._id + step
        self._id += chunk * step
        self._left -= chunk
        return range(first, self._id + 1, step)

    def _open(self, first: int, size: int) -> None:
        """Begin a block of ``size`` IDs from ``first``, counting what the last one issued
        (here, on the slow path, so that :meth:`stats` costs the hot path nothing). Only
        stores after the count: an interrupt never leaves half a block."""
        issued = self._issued + self._block - self._room()
        self._id = first - self._step
        self._issued, self._block, self._left = issued, size, size

    def _ensure_room(self, wanted: int, waited_ns: int) -> int:
        """Make room in the block (a new tick or block, running ahead, or raising) and
        return 0, or return how many ns to wait for the clock first; ``waited_ns`` is what this
        call waited so far."""
        raise NotImplementedError

    def close(self) -> None:
        """Give the node back to its source, saying how far it issued (so a later holder of the
        node starts after that). The generator is done: a later call raises NodeError, since
        the node's next holder may already be issuing from the fence written here."""
        _forking.adopt()  # in a child forked from C: never give back the parent's node
        self._changing(self._close)  # the hot path stops before the fence is read

    def _close(self) -> None:
        self._closed = True
        self._drop_assignment()

    def __del__(self) -> None:
        # A dropped generator frees its node; the release fences the node's next holder. Never
        # raise from here: a lease that cannot be released lapses at its end all the same. In a
        # child forked from C whose hooks have not run yet, the assignment is the parent's.
        assignment = getattr(self, "_assignment", None)
        if assignment is not None and assignment.release is not None:
            with contextlib.suppress(Exception):  # at exit, even _forking may be gone
                if _forking.live[()]:
                    assignment.release(self._issued_until_ns())

    def _mark_stale(self) -> None:
        """Send the next call down the slow path, which takes a node before issuing."""
        self._stale = True
        self._open(0, 0)

    def stats(self) -> GeneratorStats | None:
        """IDs issued and run-ahead now, or None for a generator that never issued."""
        issued = self._issued + self._block - self._room()
        if not issued:
            return None
        node = ",".join(f"{k}={v}" for k, v in (self.node or {}).items()) or "-"
        return GeneratorStats(self.layout.lease_key, node, issued, self._run_ahead_s())

    def _run_ahead_s(self) -> float:
        """How far the last ID's time is ahead of the clock (a counter has none)."""
        return 0.0

    def _drop_assignment(self) -> None:
        """Stop issuing from the node, then give it back saying how far it issued: stale first,
        forgotten last, so an interrupt anywhere in between leaves a generator that releases
        again (a release is idempotent) and claims anew, never one issuing from a node it gave
        back. Never given back lower than its fence, what the node's previous holder issued up
        to: a claim interrupted before it applied the fence issued nothing, and its clock may
        be behind that fence."""
        assignment = self._assignment
        until = self._issued_until_ns()
        self._mark_stale()
        if assignment is not None:
            if assignment.release is not None:
                assignment.release(max(until, assignment.not_before_ns))
            self._assignment = None

    def _issued_until_ns(self) -> int:
        """A time no ID of this generator is later than (for fencing the node's next holder)."""
        return time.time_ns()

    def _assign(self) -> Assignment:
        """Take fresh node values from the source; the source raises when it has none. The
        generator stays stale until the node, its limits and its fence are all in place."""
        self._check_owner()
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
        if assignment.renew is not None:  # a lease: give it back on SIGTERM too, not only atexit
            shutdown.arm()
        self._accept(assignment)
        self._stale = False
        return assignment

    def _accept(self, assignment: Assignment) -> None:
        """Apply what a fresh assignment says beyond its node values (a time layout's window
        and fence); nothing for a counter."""

    def _check_owner(self) -> None:
        """Before every node claim: a closed generator, or another process's fixed node, is
        refused; a child of a lease-source generator becomes its owner."""
        if self._closed:
            raise GeneratorClosed(
                f"this generator of layout {self.layout.name!r} was closed and its node given "
                "back, so it never issues again; make a new one (make_generator) or ask the "
                "registry for the current one (django_app generator_for, sqlalchemy_ext "
                "get_generator)"
            )
        here = _forking.process()
        if here is self._owner:
            return
        source = self._source
        if source is None or isinstance(source, FixedSource):  # None: the environment's node
            described = source.description if source else "the node from the environment"
            raise forked_child_error(described, self._owner.pid)
        self._owner = here

    def __reduce__(self) -> NoReturn:
        raise WrongArgumentType(_NO_COPY)

    def __copy__(self) -> NoReturn:
        raise WrongArgumentType(_NO_COPY)

    def __deepcopy__(self, memo: dict[int, object]) -> NoReturn:
        raise WrongArgumentType(_NO_COPY)

    def forked(self) -> None:
        """In a child after fork (the at-fork hook): a new lock, and the parent's node is never
        used again; the next call claims a node for this process, or is refused."""
        self._lock = threading.Lock()
        self._busy = 0
        self._assignment = None  # the parent's; never released from here
        self._mark_stale()
        self._issued = 0  # the parent's IDs are the parent's to report
