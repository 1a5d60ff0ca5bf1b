"""Clocks and cores shared by the generator tests (tests/generators/)."""

from __future__ import annotations

import itertools

import pytest

from idfields import Assignment, Layout
from idfields.generators import COMPILED, CounterGenerator, TimeGenerator
from idfields.generators._hotpath import PureCounterCore, PureTimeCore

MS = 1_000_000
# A fixed point for the fake clock, after anything real-clock tests issue: a node they used is
# fenced after their IDs, and a fake clock behind that fence would (rightly) have to wait.
START_NS = 1_900_000_000_000 * MS  # 2030-03-17


class FakeClock:
    """An injectable wall clock: steps where the test says, and sleeping moves it forward."""

    def __init__(self, now_ns: int = START_NS) -> None:
        self.now_ns = now_ns
        self.slept_ns = 0

    def __call__(self) -> int:
        return self.now_ns

    def sleep(self, seconds: float) -> None:
        step = max(1, round(seconds * 1e9))
        self.now_ns += step
        self.slept_ns += step


class StuckClock(FakeClock):
    """A clock that never moves, even while the generator sleeps."""

    def sleep(self, seconds: float) -> None:
        self.slept_ns += round(seconds * 1e9)


if COMPILED:

    class PureTimeGenerator(PureTimeCore, TimeGenerator):
        """The pure-Python reference logic on the compiled core's state."""

    class PureCounterGenerator(PureCounterCore, CounterGenerator):
        """The pure-Python reference logic on the compiled counter core's state."""

else:
    PureTimeGenerator = TimeGenerator  # type: ignore[misc]  # already the reference
    PureCounterGenerator = CounterGenerator  # type: ignore[misc]


class OneNode:
    """A source handing every caller the same node, unfenced: for comparing two cores on equal
    terms in one process (a real fixed source fences the second generator after the first)."""

    def __init__(self, node: int) -> None:
        self.node = node

    def acquire(self, layout: Layout) -> Assignment:
        return Assignment({layout.node_fields[0].name: self.node})


CORES = (
    [pytest.param(TimeGenerator, id="compiled"), pytest.param(PureTimeGenerator, id="pure")]
    if COMPILED
    else [pytest.param(TimeGenerator, id="pure")]
)
"""Both hot paths: every scenario runs against each."""

COUNTER_CORES = (
    [
        pytest.param(CounterGenerator, id="counter-compiled"),
        pytest.param(PureCounterGenerator, id="counter-pure"),
    ]
    if COMPILED
    else [pytest.param(CounterGenerator, id="counter-pure")]
)
"""Both hot paths of the layouts without a clock (DecimalId, runid)."""

_fresh_nodes = itertools.count(300)


def fresh_node() -> int:
    """A fixed snowflake node no other test in this process uses: a fixed node is fenced after
    its last IDs, so one a fake clock used in 2030 would stall a real-clock test (the benchmark
    harness takes 100 and up; test_1024 avoids the fence with OneNode)."""
    return next(_fresh_nodes)
