"""Lease renewals on a thread of their own, ahead of time, so no ID call waits for the database.

A generator renews its lease inside the call that needs an ID once the renewal is due. In an
async application that call runs on the event loop (a column default during an
``AsyncSession`` flush), and the round trip stalls every coroutine meanwhile.
:class:`BackgroundRenewal` wraps a lease source: each lease it hands out renews on a daemon
thread from its renewal time on, and the generator's ``renew()`` only reads the outcome (it
renews itself only when the thread is far behind, so a starved thread never stops the IDs).

Safety is unchanged: the generator still never issues past ``valid_until_ns``, which only moves
once the database confirmed the renewal. A failing database leaves the thread retrying each
second until the lease runs out, when the generator stops issuing as it would have; a lease
another process took is reported to the generator by its next ``renew()``, and it claims a new
node (a claim: the one lease step left inside an ID call, see ``sqlalchemy_ext.lifespan``).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable

from idfields.errors import NodeError
from idfields.layouts import Layout
from idfields.nodes import Assignment, NodeSource

logger = logging.getLogger("idfields.coordination")

_NS_PER_S = 1_000_000_000
_RETRY_NS = _NS_PER_S  # after a failed renewal
_POLL_NS = _NS_PER_S // 10  # how soon a generator asks again while the thread has not renewed


class BackgroundRenewal:
    """A :class:`~idfields.nodes.NodeSource` whose leases renew on a thread, before they are
    due; claims go to ``source`` as they are (make them off the event loop)."""

    def __init__(self, source: NodeSource, *, clock: Callable[[], int] = time.time_ns) -> None:
        self._source = source
        self._clock = clock

    def __repr__(self) -> str:
        return f"BackgroundRenewal({self._source!r})"

    def acquire(self, layout: Layout) -> Assignment:
        assignment = self._source.acquire(layout)
        renew_after, valid_until = assignment.renew_after_ns, assignment.valid_until_ns
        if assignment.renew is None or renew_after is None or valid_until is None:
            return assignment  # nothing to renew
        keeper = _Keeper(
            assignment.renew, assignment.release, (renew_after, valid_until), self._clock
        )
        keeper.start(f"idfields lease renewal ({layout.name} {dict(assignment.values)})")
        return dataclasses.replace(
            assignment, renew=keeper.renew, release=keeper.release, renew_after_ns=renew_after
        )


class _Keeper:
    """One lease: its renewal thread, and the window the thread last had confirmed."""

    def __init__(
        self,
        renew: Callable[[], tuple[int, int]],
        release: Callable[[int], None] | None,
        window: tuple[int, int],
        clock: Callable[[], int],
    ) -> None:
        self._renew = renew
        self._release = release
        self._window = window  # (renew after, valid until), as the database last confirmed
        self._lost: NodeError | None = None
        self._clock = clock
        self._lock = threading.Lock()  # a renewal and the release never overlap
        self._stopped = threading.Event()

    def start(self, name: str) -> None:
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def renew(self) -> tuple[int, int]:
        """The generator's renewal: the thread's latest outcome, no database work, unless the
        thread is late by half of what is left of the lease (starved, or its database calls
        hang): then the renewal runs here, as it would without this wrapper."""
        if self._lost is not None:
            raise self._lost
        renew_after, valid_until = self._window
        now = self._clock()
        if now < renew_after + (valid_until - renew_after) // 2:
            return max(renew_after, now + _POLL_NS), valid_until
        with self._lock:
            if self._window[0] == renew_after:  # the thread did not renew meanwhile
                try:
                    self._window = self._renew()
                except NodeError as error:
                    self._lost = error
                    self._stopped.set()
                    raise
        return self._window

    def release(self, issued_until_ns: int) -> None:
        self._stopped.set()
        with self._lock:
            if self._release is not None:
                self._release(issued_until_ns)

    def _run(self) -> None:
        next_at = self._window[0]
        while not self._stopped.wait(max(0, next_at - self._clock()) / _NS_PER_S):
            with self._lock:
                if self._stopped.is_set():
                    return
                try:
                    self._window = self._renew()
                except NodeError as error:  # another process holds the node now
                    self._lost = error
                    return
                except Exception:  # the database failed: retry until the lease runs out
                    logger.warning("lease renewal failed; retrying in 1 s", exc_info=True)
                    next_at = self._clock() + _RETRY_NS
                    continue
            next_at = self._window[0]
