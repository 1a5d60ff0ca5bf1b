"""Call a generator under a storm of signals whose handler raises, as Celery's soft time limit
(SoftTimeLimitExceeded from a signal handler) and Ctrl-C (KeyboardInterrupt) do.

``signal_storm_child.py <static|leases|counter> <interrupts>``: a timer fires every 20 µs to 1 ms
while the process calls ``gen()`` and ``take(n)`` (large enough to run ahead and wait for the
clock); the handler raises inside whichever call it lands in. ``leases`` takes nodes from an
in-memory lease table whose renewals expire, get lost and are taken again, so claims,
renewals and releases are interrupted too; ``counter`` is a runid generator taking a fresh
run for every block. Prints one JSON line: interrupts landed, whether
the lock was found held between calls, whether the generator answered afterwards (within a
bounded wait), and whether the IDs it returned kept increasing (so never repeated).
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import random
import signal
import sys
import threading
import time
from types import FrameType

from idfields import Assignment, ClockMovedBackwards, Layout, NodeError, make_generator
from idfields.generators import IdGenerator

MS = 1_000_000
ANSWER_WAIT_S = 30.0  # far beyond a lease's refusals (1 s at most): a held lock never answers


class Interrupted(Exception):
    """What the handler raises (Celery's SoftTimeLimitExceeded is an Exception too)."""


armed = False  # the handler raises only inside the generator's calls, never in this harness


def handler(signum: int, frame: FrameType | None) -> None:
    """Raise inside the generator's call; the next signal comes after 20 µs to 1 ms, so work of
    every length (a claim too) is sometimes finished and sometimes cut anywhere."""
    global armed
    signal.setitimer(signal.ITIMER_REAL, random.uniform(0.00002, 0.001))
    if armed:
        armed = False
        raise Interrupted


class Leases:
    """A lease table in memory, written to survive the storm itself: a holding lapses at its
    expiry; a released or lapsed node is fenced after what its holder could have issued; every
    fifth renewal is lost (the node handed on, fenced at the lease's end)."""

    def __init__(self, nodes: int) -> None:
        self.fence = dict.fromkeys(range(1, nodes + 1), 0)
        self.held: dict[int, tuple[object, int]] = {}  # node -> (holder, expires_ns)
        self.renewals = 0

    def acquire(self, layout: Layout) -> Assignment:
        now = time.time_ns()
        free = [n for n in self.fence if n not in self.held or self.held[n][1] < now]
        if not free:
            raise NodeError("every node is held")
        node = free[0]
        lapsed = self.held.get(node, (None, 0))[1]
        fence = max(self.fence[node], lapsed)
        holder = object()
        expires = now + 40 * MS
        self.held[node] = (holder, expires)  # one store: the claim, its fence already known

        def renew() -> tuple[int, int]:
            mine = self.held.get(node)
            if mine is None or mine[0] is not holder:
                raise NodeError("lost")
            self.renewals += 1
            if self.renewals % 5 == 0:
                self.fence[node] = max(self.fence[node], mine[1])
                del self.held[node]
                raise NodeError("lost")
            at = time.time_ns()
            self.held[node] = (holder, at + 40 * MS)
            return at + 5 * MS, at + 40 * MS

        def release(until: int) -> None:
            mine = self.held.get(node)
            if mine is not None and mine[0] is holder:
                self.fence[node] = max(self.fence[node], until)
                del self.held[node]

        name = layout.node_fields[0].name
        return Assignment(
            {name: node},
            not_before_ns=fence,
            valid_until_ns=expires,
            renew_after_ns=now + 5 * MS,
            renew=renew,
            release=release,
        )


def answer(gen: IdGenerator, into: list[int]) -> None:
    """An ID, once the refusals a lease allows (an expired lease, a fence ahead) are over."""
    while True:
        try:
            into.append(gen())
            return
        except (NodeError, ClockMovedBackwards):
            time.sleep(0.01)


class FreshRuns:
    """A never-used run id for every block, as RunIdSource gives from its database."""

    def __init__(self) -> None:
        self.runs = itertools.count(1)

    def acquire(self, layout: Layout) -> Assignment:
        return Assignment({"run": next(self.runs)})


def storm(gen: IdGenerator, interrupts: int) -> dict[str, object]:
    global armed
    last = issued = 0
    increasing = True  # and so unique: one thread, one generator
    landed = calls = 0
    held_between_calls = False
    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.00003)
    try:
        while landed < interrupts and calls < 1000 * interrupts:
            if gen._lock.locked():  # no other thread: held now means held for good
                gc.collect()  # unless a frame of ours still holds what would let it go
                if gen._lock.locked():
                    held_between_calls = True
                    break
            calls += 1
            armed = True
            try:
                got = gen.take(calls % 9000) if calls % 97 == 0 else [gen()]
                armed = False
            except Interrupted:
                landed += 1
                continue
            except (NodeError, ClockMovedBackwards):  # no free node, or one fenced ahead of the
                armed = False  # clock beyond max_skew (a lost lease): refusals, not the point
                continue
            increasing = increasing and all(a < b for a, b in zip([last, *got], got, strict=False))
            last = got[-1] if got else last
            issued += len(got)
    finally:
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        signal.setitimer(signal.ITIMER_REAL, 0)
    gc.collect()
    after: list[int] = []
    caller = threading.Thread(target=answer, args=(gen, after), daemon=True)
    caller.start()
    caller.join(ANSWER_WAIT_S)
    return {
        "interrupts": landed,
        "held": held_between_calls,
        "answered": bool(after),
        "ids": issued + len(after),
        "increasing": increasing and all(last < a for a in after),
    }


def main(kind: str, interrupts: int) -> None:
    if kind == "leases":
        gen = make_generator("snowflake", Leases(8), max_skew_ns=50 * MS)
    elif kind == "counter":  # a counter layout: a fresh run every 16,384 IDs
        gen = make_generator("runid", FreshRuns())
    else:  # a small skew: take() waits for the clock, and the waits are interrupted too
        gen = make_generator("snowflake", node=5, max_skew_ns=2 * MS)
    print(json.dumps(storm(gen, interrupts)), flush=True)
    os._exit(0)  # no exit hooks: close() would wait for ever on a lock left held


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
