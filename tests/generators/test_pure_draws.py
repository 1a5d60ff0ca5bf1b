"""The pure-Python hot path draws without a lock, from the block the slow path published.

A thread may load the block, lose the GIL, and draw from it long after the slow path moved on:
to a later tick, through a take(), a clock step, a close and a new holder of the node. Every
ID drawn, late or not, is still drawn once. The late readers are modelled exactly (what such a
thread holds is the window it loaded, and its clock reading), so hypothesis explores the
interleavings; real threads and the interpreter's GIL check follow.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from generator_support import MS, FakeClock, PureCounterGenerator, PureTimeGenerator, fresh_node
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from idfields import Assignment, ClockMovedBackwards, Layout, StaticNode
from idfields.generators._hotpath import ATOMIC_DRAWS

pytestmark = [pytest.mark.core]


class Handover:
    """One node handed from holder to holder, each fenced after what the last one issued (as
    a lease is)."""

    def __init__(self) -> None:
        self.until = 0

    def acquire(self, layout: Layout) -> Assignment:
        def release(issued_until_ns: int) -> None:
            self.until = max(self.until, issued_until_ns)

        return Assignment({"node": 9}, not_before_ns=self.until, release=release)


class FreshRuns:
    """A never-used run id for every block, as RunIdSource gives from its database."""

    def __init__(self) -> None:
        self.runs = itertools.count(1)

    def acquire(self, layout: Layout) -> Assignment:
        return Assignment({"run": next(self.runs)})


STEP = st.one_of(
    st.tuples(st.just("clock"), st.integers(-3 * MS, 3 * MS)),
    st.tuples(st.just("call"), st.integers(1, 3000)),
    st.tuples(st.just("take"), st.integers(0, 6000)),
    st.tuples(st.just("load"), st.just(0)),  # a thread loads the window, then loses the GIL
    st.tuples(st.just("draw"), st.integers(0, 7)),  # a loaded thread draws at last
    st.tuples(st.just("handover"), st.just(0)),  # close(); the node's next holder starts
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=st.lists(STEP, max_size=30), skew_ms=st.integers(0, 3))
def test_a_thread_drawing_late_from_an_old_block_never_repeats_an_id(
    script: list[tuple[str, int]], skew_ms: int
) -> None:
    clock, source = FakeClock(), Handover()

    def holder() -> PureTimeGenerator:
        return PureTimeGenerator(
            "snowflake", source, clock=clock, sleep=clock.sleep, max_skew_ns=skew_ms * MS
        )

    generator = holder()
    loaded: list[Iterator[int]] = []
    issued: list[int] = []
    for kind, value in script:
        try:
            if kind == "clock":
                clock.now_ns += value
            elif kind == "call":
                issued += [generator() for _ in range(value)]
            elif kind == "take":
                issued += generator.take(value)
            elif kind == "load":  # the hot path up to its draw: clock, window, window test
                now = clock()
                ids, floor_ns, end_ns = generator._window
                if floor_ns <= now < end_ns:
                    loaded.append(ids)
            elif kind == "draw" and loaded:
                issued += itertools.islice(loaded[value % len(loaded)], 1)
            elif kind == "handover":
                generator.close()
                generator = holder()
        except ClockMovedBackwards:
            pass
    issued += [value for ids in loaded for value in ids]  # every late thread, drawing on
    assert len(set(issued)) == len(issued)


def _hammer(generator: object, threads: int, calls: int) -> list[list[int]]:
    """``threads`` threads calling ``generator`` (and now and then take()), switching as often
    as the interpreter lets them."""
    issued: list[list[int]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def issue() -> None:
        ids: list[int] = []
        try:
            start.wait()
            for n in range(calls):
                ids.append(generator())  # type: ignore[operator]
                if n % 997 == 0:
                    ids += generator.take(3000)  # type: ignore[attr-defined]
        except BaseException as error:
            errors.append(error)
        issued.append(ids)

    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=issue) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(switching)
    assert not errors
    return issued


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: PureTimeGenerator("snowflake", StaticNode(fresh_node())), id="time"),
        pytest.param(lambda: PureCounterGenerator("runid", FreshRuns()), id="counter"),
    ],
)
def test_threads_drawing_without_a_lock_never_share_an_id(make: object) -> None:
    issued = _hammer(make(), threads=6, calls=40_000)  # type: ignore[operator]
    everything = [value for ids in issued for value in ids]
    assert len(set(everything)) == len(everything)
    for ids in issued:  # each thread's own IDs still increase
        assert all(a < b for a, b in itertools.pairwise(ids))


def test_the_lock_free_path_is_chosen_only_where_draws_are_atomic() -> None:
    """Under the GIL the pure core draws without a lock; where the interpreter runs without
    it (free-threaded CPython), every call takes the lock. The second is simulated here by the
    interpreter's own switch, read before idfields is imported."""
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    assert ATOMIC_DRAWS is gil
    code = (
        "import sys; sys._is_gil_enabled = lambda: False\n"
        "from idfields.generators import _hotpath as h, make_generator\n"
        "assert not h.ATOMIC_DRAWS and h.TimeCore is h._LockedTimeCore\n"
        "assert h.CounterCore is h._LockedCounterCore\n"
        "g = make_generator('snowflake', node=3)\n"
        "ids = [g() for _ in range(20000)] + g.take(9000)\n"
        "assert len(set(ids)) == len(ids) and ids == sorted(ids)\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "IDFIELDS_PURE_PYTHON": "1"},
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stdout.strip() == "ok", done.stderr
