"""The compiled core against the pure-Python reference, and against careless callers."""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import types
from typing import Any

import pytest
from generator_support import MS, FakeClock, OneNode, PureTimeGenerator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from needs import NEEDS

from idfields import BUILTIN_LAYOUTS, ClockMovedBackwards, make_generator
from idfields.generators import COMPILED, TimeGenerator

pytestmark = pytest.mark.skipif(not COMPILED, reason=NEEDS["compiled core"])


@pytest.mark.parametrize("layout", sorted(BUILTIN_LAYOUTS))
def test_every_builtin_layout_issues_through_the_compiled_core(layout: str) -> None:
    call = type(make_generator(layout)).__call__  # the node is taken at first use, not here
    assert isinstance(call, types.WrapperDescriptorType), f"{layout}: {call!r} runs Python code"
    assert call.__objclass__.__module__ == "idfields._speedups"


def test_deleting_the_clock_is_refused_not_a_crash() -> None:
    code = (
        "from idfields import make_generator\n"
        "g = make_generator('snowflake', node=1)\n"
        "try:\n"
        "    del g._clock\n"
        "except (AttributeError, TypeError) as error:\n"
        "    print('refused:', error)\n"
        "g()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, f"exit {out.returncode}: {out.stderr[-300:]}"
    assert "refused:" in out.stdout


def test_a_clock_that_is_not_callable_is_refused() -> None:
    generator = TimeGenerator("snowflake", OneNode(1))
    with pytest.raises(TypeError, match="callable"):
        generator._clock = 5  # type: ignore[assignment]


def test_a_clock_replacing_itself_while_called_is_safe() -> None:
    generator = TimeGenerator("snowflake", OneNode(1))

    class OneShot:
        def __call__(self) -> int:
            generator._clock = FakeClock()  # drops the generator's reference to this clock
            return FakeClock().now_ns

    generator._clock = OneShot()
    assert generator() > 0
    assert generator() > 0


# -- differential: the compiled core mirrors the reference -----------------------------------------

# One step of a script: advance or step back the clock (ns), one call, or take(n).
STEP = st.one_of(
    st.tuples(st.just("clock"), st.integers(-8, 8).map(lambda ms: ms * MS)),
    st.tuples(st.just("clock"), st.integers(-3 * MS, 3 * MS)),
    st.tuples(st.just("call"), st.integers(1, 5000)),
    st.tuples(st.just("take"), st.integers(0, 9000)),
)


def _run(core: type[TimeGenerator], script: list[tuple[str, int]], skew_ms: int) -> list[Any]:
    """Every observable of a script: the IDs, each error, and where the clock stands (a core
    that waits where the other issues leaves the clock elsewhere)."""
    clock = FakeClock()
    generator = core(
        "snowflake",
        OneNode(7),
        clock=clock,
        sleep=clock.sleep,
        max_skew_ns=skew_ms * MS,
        max_wait_ns=4 * MS,
    )
    seen: list[Any] = []
    for kind, value in script:
        try:
            if kind == "clock":
                clock.now_ns += value
            elif kind == "call":
                seen.append([generator() for _ in range(value)])
            else:
                seen.append(generator.take(value))
        except ClockMovedBackwards:
            seen.append("ClockMovedBackwards")
        seen.append(clock.now_ns)
    return seen


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=st.lists(STEP, max_size=25), skew_ms=st.integers(0, 4))
def test_the_compiled_core_issues_exactly_what_the_reference_issues(
    script: list[tuple[str, int]], skew_ms: int
) -> None:
    assert _run(TimeGenerator, script, skew_ms) == _run(PureTimeGenerator, script, skew_ms)


def _threaded(core: type[TimeGenerator], steps: list[int]) -> list[list[int]]:
    """Four threads issue while the main thread steps a shared fake clock back and forth."""
    clock = FakeClock()
    generator = core("snowflake", OneNode(8), clock=clock, sleep=clock.sleep)
    done = threading.Event()
    progress = threading.Semaphore(0)  # released every 100 IDs: the clock steps between calls
    issued: list[list[int]] = []
    errors: list[BaseException] = []

    def issue() -> None:
        ids: list[int] = []
        try:
            while not done.is_set() or len(ids) < 2000:
                ids.append(generator())
                if len(ids) % 100 == 0:
                    progress.release()
                if len(ids) % 700 == 0:
                    ids += generator.take(300)
        except BaseException as error:
            errors.append(error)
        issued.append(ids)

    threads = [threading.Thread(target=issue) for _ in range(4)]
    for thread in threads:
        thread.start()
    highest = clock.now_ns
    for step in steps:  # never more than 0.9 s behind its highest reading: max_wait bridges it
        progress.acquire(timeout=5)
        clock.now_ns = max(clock.now_ns + step, highest - 900 * MS)
        highest = max(highest, clock.now_ns)
    done.set()
    for thread in threads:
        thread.join()
    assert not errors
    return issued


@settings(max_examples=15, deadline=None)
@given(steps=st.lists(st.integers(-900 * MS, 5 * MS), min_size=1, max_size=40))
def test_under_threads_both_cores_keep_every_promise(steps: list[int]) -> None:
    for core in (TimeGenerator, PureTimeGenerator):
        issued = _threaded(core, steps)
        everything = [value for ids in issued for value in ids]
        assert len(set(everything)) == len(everything)
        for ids in issued:
            assert all(a < b for a, b in itertools.pairwise(ids))
