"""The compiled counter core (DecimalId, runid) against the pure-Python reference."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import pytest
from generator_support import COUNTER_CORES, PureCounterGenerator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from needs import NEEDS

from idfields import Assignment, IdFieldsError, Layout, NodeError
from idfields.generators import COMPILED, CounterGenerator
from idfields.layouts import DECIMAL, Constant, Node, Sequence

pytestmark = pytest.mark.skipif(not COMPILED, reason=NEEDS["compiled core"])

# Blocks small enough to use up within a script: each renewal, and the source running dry.
TINY_DECIMAL = Layout(
    "tiny_decimal",
    [
        Sequence(1, name="counter", minimum=1, maximum=5),
        Node(5, name="generator_id"),
        Node(5, name="launch_id"),
    ],
    base=10,
)
TINY_RUNID = Layout(
    "tiny_runid", [Constant(3, value=5), Node(20, name="run", minimum=1), Sequence(3)]
)
LAYOUTS = {layout.name: layout for layout in (DECIMAL, TINY_DECIMAL, TINY_RUNID)}


class Handing:
    """Hands out node 1, 2, 3... (launch_id 1) until ``limit``, then refuses; logs every claim
    and release, so a core that claimed or gave back a node at another moment shows it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.log: list[str] = []
        self.claims = itertools.count(1)
        self.guard = threading.Lock()  # claims come from many threads in the threaded test

    def acquire(self, layout: Layout) -> Assignment:
        with self.guard:
            node = next(self.claims)
        if node > self.limit:
            self.log.append("refused")
            raise NodeError(f"no node left after {self.limit}")
        self.log.append(f"claimed {node}")
        first, *rest = layout.node_fields
        values = {first.name: node, **{field.name: 1 for field in rest}}
        return Assignment(values, release=lambda _until_ns: self.log.append(f"released {node}"))


# One step of a script: n single calls, take(n), close(), or what the at-fork hook runs in a
# child (the node is dropped, the next call claims another).
STEP = st.one_of(
    st.tuples(st.just("call"), st.integers(1, 40)),
    st.tuples(st.just("take"), st.integers(0, 40)),
    st.tuples(st.sampled_from(["close", "forked"]), st.just(0)),
)


def _run(
    core: type[CounterGenerator], layout: str, script: list[tuple[str, int]], nodes: int
) -> list[Any]:
    """Every observable of a script: the IDs, each error, the source's log and the stats."""
    source = Handing(nodes)
    generator = core(LAYOUTS[layout], source)
    seen: list[Any] = []
    for kind, value in script:
        ids: list[int] = []
        try:
            if kind == "call":
                for _ in range(value):
                    ids.append(generator())
            elif kind == "take":
                ids = generator.take(value)
            else:
                getattr(generator, kind)()
        except IdFieldsError as error:
            seen.append((type(error).__name__, str(error)))
        seen.append(ids)
    return [*seen, source.log, generator.stats()]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    layout=st.sampled_from(sorted(LAYOUTS)),
    script=st.lists(STEP, max_size=25),
    nodes=st.integers(0, 6),
)
def test_the_compiled_counter_core_issues_exactly_what_the_reference_issues(
    layout: str, script: list[tuple[str, int]], nodes: int
) -> None:
    assert _run(CounterGenerator, layout, script, nodes) == _run(
        PureCounterGenerator, layout, script, nodes
    )


def _threaded(core: type[CounterGenerator]) -> list[list[int]]:
    """Four threads call and take() from one generator whose blocks of 5 run out every few
    calls: renewals under the lock race the hot path of the other threads. (What keeps the hot
    path out while the lock holder changes state, ``_busy``, is tested deterministically by
    tests/generators/test_generator_close.py.)"""
    generator = core(TINY_DECIMAL, Handing(limit=99_999))
    start = threading.Barrier(4)
    issued: list[list[int]] = []
    errors: list[BaseException] = []

    def issue() -> None:
        ids: list[int] = []
        start.wait()
        try:
            for round_ in range(2_000):
                ids.append(generator())
                if round_ % 7 == 0:
                    ids += generator.take(3)
        except BaseException as error:
            errors.append(error)
        issued.append(ids)

    threads = [threading.Thread(target=issue) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    return issued


@pytest.mark.parametrize("core", COUNTER_CORES)
def test_under_threads_both_counter_cores_never_repeat(core: type[CounterGenerator]) -> None:
    issued = _threaded(core)
    everything = [value for ids in issued for value in ids]
    assert len(everything) == 4 * (2_000 + 3 * 286)
    assert len(set(everything)) == len(everything)
    for ids in issued:  # increasing within each block (one generator_id), as each thread saw it
        blocks: dict[int, list[int]] = {}
        for value in ids:
            blocks.setdefault(value % 10**10, []).append(value)
        assert all(block == sorted(block) for block in blocks.values())
