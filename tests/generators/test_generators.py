"""Generators: strictly increasing, never repeating, across threads, forks, clock and leases."""

from __future__ import annotations

import copy
import multiprocessing
import os
import pickle
import subprocess
import sys
import threading
from array import array
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pytest
from generator_support import (
    MS,
    START_NS,
    FakeClock,
    OneNode,
    PureTimeGenerator,
    fresh_node,
)
from needs import NEEDS

from idfields import (
    Assignment,
    ClockMovedBackwards,
    Layout,
    LayoutExhausted,
    Node,
    NodeError,
    NodeNotConfigured,
    Sequence,
    StaticNode,
    Timestamp,
    make_generator,
)
from idfields.generators import COMPILED, CounterGenerator, TimeGenerator
from idfields.layouts import DECIMAL, SNOWFLAKE

pytestmark = pytest.mark.core


class ForkPool:
    """A node source that hands each process (parent and forked children) its own node."""

    def __init__(self) -> None:
        self.next_node = multiprocessing.Value("i", 0)

    def acquire(self, layout: Layout) -> Assignment:
        with self.next_node.get_lock():
            node = self.next_node.value
            self.next_node.value += 1
        return Assignment({layout.node_fields[0].name: node})


def snowflake(clock: FakeClock, **options: int) -> TimeGenerator:
    """A generator on a node no other test used (a reused node is fenced after its last IDs)."""
    node = fresh_node()
    generator = make_generator("snowflake", node=node, clock=clock, sleep=clock.sleep, **options)
    assert isinstance(generator, TimeGenerator)
    return generator


def assert_strictly_increasing(ids: list[int]) -> None:
    assert all(a < b for a, b in pairwise(ids))


def time_ns_of(value: int) -> int:
    decoded = SNOWFLAKE.decode(value).time_ns
    assert decoded is not None
    return decoded


# -- threads ---------------------------------------------------------------------------------------


def test_one_generator_from_many_threads_is_strictly_increasing_per_thread() -> None:
    generator = make_generator("snowflake", node=3)
    results: list[list[int]] = [[] for _ in range(8)]

    def issue(index: int) -> None:
        out = results[index]
        for _ in range(25_000):
            out.append(generator())

    threads = [threading.Thread(target=issue, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [value for result in results for value in result]
    assert len(set(everything)) == 200_000
    for result in results:
        assert_strictly_increasing(result)


def test_1024_generators_on_nodes_0_to_1023_issue_1024000_distinct_ids() -> None:
    # unfenced sources: other tests' fixed nodes may carry fences in 2030 (fake clocks)
    generators = [make_generator("snowflake", OneNode(node)) for node in range(1024)]

    def issue(index: int) -> list[int]:
        generator = generators[index]
        return [generator() for _ in range(1000)]

    with ThreadPoolExecutor(max_workers=16) as pool:
        batches = list(pool.map(issue, range(1024)))
    everything = {value for batch in batches for value in batch}
    assert len(everything) == 1_024_000
    nodes = {SNOWFLAKE.decode(batch[0]).values["node"] for batch in batches}
    assert nodes == set(range(1024))


# -- fork ------------------------------------------------------------------------------------------


def _fork_children(count: int, body: object) -> list[int]:
    pids = []
    for index in range(count):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            code = 1
            try:
                body(index)  # type: ignore[operator]
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    return [os.waitpid(pid, 0)[1] for pid in pids]


@pytest.mark.slow
def test_eight_forked_children_of_one_generator_never_repeat(tmp_path: Path) -> None:
    generator = make_generator("snowflake", ForkPool())
    parent_ids = generator.take(1000)

    def child(index: int) -> None:
        ids = array("q", (generator() for _ in range(200_000)))
        (tmp_path / f"child{index}").write_bytes(ids.tobytes())

    statuses = _fork_children(8, child)
    assert statuses == [0] * 8
    seen = set(parent_ids)
    for index in range(8):
        ids = array("q")
        ids.frombytes((tmp_path / f"child{index}").read_bytes())
        assert len(ids) == 200_000
        assert_strictly_increasing(list(ids))
        seen.update(ids)
    assert len(seen) == 1000 + 8 * 200_000
    after = generator()
    assert after > parent_ids[-1]  # the parent goes on with its own node


def test_a_forked_child_of_a_static_node_refuses_instead_of_repeating(tmp_path: Path) -> None:
    generator = make_generator("snowflake", node=9)
    generator()
    message = tmp_path / "message"

    def child(index: int) -> None:
        try:
            generator()
        except NodeError as error:
            message.write_text(str(error))

    assert _fork_children(1, child) == [0]
    text = message.read_text()
    assert "belongs to the parent process" in text and "IDFIELDS_NODE_ID" in text
    generator()  # the parent is unaffected


# -- copies ----------------------------------------------------------------------------------------


def _pickled(generator: object) -> object:
    return pickle.loads(pickle.dumps(generator))


@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy, _pickled], ids=lambda f: f.__name__)
@pytest.mark.parametrize("layout", ["snowflake", "decimal"])
@pytest.mark.parametrize("used", [False, True], ids=["unused", "used"])
def test_a_generator_is_never_copied_into_a_second_issuer_of_its_node(
    copier: Callable[[object], object], layout: str, used: bool
) -> None:
    """A copy would go on from the same counters on the same node: refused, with the way out."""
    node = fresh_node()
    source = StaticNode(generator_id=node, launch_id=1) if layout == "decimal" else StaticNode(node)
    generator = make_generator(layout, source)
    issued = [generator() for _ in range(5)] if used else []
    with pytest.raises(TypeError, match="cannot be copied or pickled") as refused:
        copier(generator)
    assert "make_generator()" in str(refused.value)
    issued += [generator() for _ in range(5)]
    assert issued == sorted(set(issued))  # the original goes on


# -- the clock -------------------------------------------------------------------------------------


def test_clock_stepping_back_5ms_keeps_issuing_increasing_ids() -> None:
    clock = FakeClock()
    generator = snowflake(clock)
    ids = [generator() for _ in range(10)]
    clock.now_ns += 3 * MS
    ids += [generator() for _ in range(10)]
    clock.now_ns -= 5 * MS  # NTP steps the clock back
    ids += [generator() for _ in range(5000)]  # more than one tick's 4,096
    clock.now_ns += 10 * MS
    ids += [generator() for _ in range(10)]
    assert_strictly_increasing(ids)
    assert len(set(ids)) == len(ids)
    assert clock.slept_ns == 0  # bridged by running ahead, not by waiting
    # 10 + 4,086 IDs filled the tick 3 ms after the start, 914 went into the next one, while the
    # clock read 2 ms before the start: 6 ms ahead, well inside the 1 s bound.
    assert time_ns_of(ids[-11]) - (clock.now_ns - 10 * MS) == 6 * MS


def test_clock_stepping_back_10s_raises_the_typed_error_and_issues_nothing() -> None:
    clock = FakeClock()
    generator = snowflake(clock)
    before = [generator() for _ in range(100)]
    clock.now_ns -= 10_000 * MS
    with pytest.raises(ClockMovedBackwards, match=r"10\.000 s behind.*max_skew.*NTP"):
        generator()
    assert clock.slept_ns == 0  # it did not sleep for 9 seconds either
    clock.now_ns += 10_000 * MS  # the clock catches up
    after = generator()
    assert after > before[-1]


def test_a_step_back_slightly_past_the_bound_waits_a_bounded_time() -> None:
    clock = FakeClock()
    generator = snowflake(clock, max_skew_ns=5 * MS, max_wait_ns=50 * MS)
    first = generator()
    clock.now_ns -= 20 * MS
    second = generator()
    assert second > first
    assert 14 * MS <= clock.slept_ns <= 16 * MS  # waited until 5 ms of skew were left


def test_exhausted_tick_runs_ahead_then_waits_within_the_bound() -> None:
    clock = FakeClock()
    generator = snowflake(clock, max_skew_ns=5 * MS)
    ids = generator.take(4096 * 20)  # 20 ticks' worth on a clock that only moves while waiting
    assert_strictly_increasing(ids)
    assert len(ids) == 4096 * 20
    last_ahead = time_ns_of(ids[-1]) - clock.now_ns
    assert last_ahead <= 5 * MS
    assert clock.slept_ns >= 13 * MS  # it had to wait for the clock beyond the 5 ms of skew


def test_take_uses_the_full_capacity_of_each_tick() -> None:
    clock = FakeClock()
    generator = snowflake(clock)
    ids = generator.take(4096 * 3)
    ticks = [SNOWFLAKE.decode(value).values["timestamp"] for value in ids]
    assert [ticks.count(tick) for tick in sorted(set(ticks))] == [4096, 4096, 4096]
    assert generator.take(0) == []
    with pytest.raises(ValueError, match="count"):
        generator.take(-1)


def test_the_layout_running_out_is_a_clear_error() -> None:
    epoch = datetime.now(UTC) - timedelta(seconds=100)
    short = Layout("short", [Timestamp(8, unit="s", epoch=epoch), Node(4), Sequence(4)])
    clock = FakeClock(int(epoch.timestamp() * 1e9) + 300 * 10**9)
    generator = make_generator(short, node=1, clock=clock, sleep=clock.sleep)
    with pytest.raises(LayoutExhausted, match="ran out of timestamps"):
        generator()


# -- node sources ----------------------------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in ("IDFIELDS_NODE_ID", "IDFIELDS_DEVELOPMENT", "IDFIELDS_LAUNCH_ID"):
        monkeypatch.delenv(name, raising=False)
    yield monkeypatch


def test_no_silent_default_node(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(NodeNotConfigured, match=r"IDFIELDS_NODE_ID.*IDFIELDS_DEVELOPMENT=1"):
        make_generator("snowflake")()
    clean_env.setenv("IDFIELDS_NODE_ID", "5")
    assert SNOWFLAKE.decode(make_generator("snowflake")()).values["node"] == 5
    clean_env.setenv("IDFIELDS_NODE_ID", "5000")
    with pytest.raises(NodeError, match=r"out of range 0\.\.1023"):
        make_generator("snowflake")()
    clean_env.delenv("IDFIELDS_NODE_ID")
    clean_env.setenv("IDFIELDS_DEVELOPMENT", "1")
    assert SNOWFLAKE.decode(make_generator("snowflake")()).values["node"] == 0


def test_launch_zero_is_for_tests_only(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("IDFIELDS_GENERATOR_ID", "3")
    clean_env.setenv("IDFIELDS_LAUNCH_ID", "0")
    with pytest.raises(NodeError, match="reserved for tests"):
        make_generator("decimal")()
    clean_env.setenv("IDFIELDS_LAUNCH_ID", "65")
    assert DECIMAL.decode(make_generator("decimal")()).values == {
        "counter": 1,
        "generator_id": 3,
        "launch_id": 65,
    }


def test_a_misconfigured_node_fails_at_construction() -> None:
    with pytest.raises(NodeError, match="1024 is out of range"):
        make_generator("snowflake", node=1024)
    with pytest.raises(NodeError, match="several node fields"):
        make_generator("decimal", node=1)


class CountingSource:
    """A pluggable generator-id source: 1, 2, 3, ... (one process)."""

    def __init__(self) -> None:
        self.handed_out: list[int] = []

    def acquire(self, layout: Layout) -> Assignment:
        self.handed_out.append(len(self.handed_out) + 1)
        return Assignment({"generator_id": self.handed_out[-1], "launch_id": 65})


def test_decimal_counter_exhaustion_takes_a_new_generator_id() -> None:
    tiny = Layout(
        "tinydecimal",
        [
            Sequence(2, name="counter", minimum=1, maximum=5),
            Node(5, name="generator_id"),
            Node(5, name="launch_id"),
        ],
        base=10,
    )
    source = CountingSource()
    generator = make_generator(tiny, source)
    assert isinstance(generator, CounterGenerator)
    ids = [generator() for _ in range(12)] + generator.take(8)
    assert len(set(ids)) == 20
    assert source.handed_out == [1, 2, 3, 4]
    assert tiny.decode(ids[5]).values == {"counter": 1, "generator_id": 2, "launch_id": 65}


def test_a_static_source_cannot_renew_an_exhausted_sequence() -> None:
    generator = make_generator(RUNID_TINY, StaticNode(run=4))
    generator.take(8)
    with pytest.raises(NodeError, match="cannot be renewed"):
        generator()


RUNID_TINY = Layout("runid_tiny", [Node(10, name="run", minimum=1), Sequence(3)])


class LeaseLike:
    """A lease source with a fence, a short validity and a renewal that can be lost."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.nodes = iter(range(1, 100))
        self.lost = False
        self.unreachable = False
        self.renewals = 0
        self.released: list[int] = []

    def acquire(self, layout: Layout) -> Assignment:
        now = self.clock()
        return Assignment(
            {"node": next(self.nodes)},
            not_before_ns=now + 20 * MS,
            valid_until_ns=now + 80 * MS,
            renew_after_ns=now + 40 * MS,
            renew=self.renew,
            release=self.released.append,
        )

    def renew(self) -> tuple[int, int]:
        if self.unreachable:
            raise ConnectionError("database down")
        if self.lost:
            raise NodeError("lease lost")
        self.renewals += 1
        now = self.clock()
        return now + 40 * MS, now + 80 * MS


def test_lease_fence_renewal_loss_and_release() -> None:
    clock = FakeClock()
    source = LeaseLike(clock)
    generator = make_generator("snowflake", source, clock=clock, sleep=clock.sleep)
    first = generator()
    assert time_ns_of(first) > START_NS + 20 * MS  # starts after the previous holder's fence
    clock.now_ns += 50 * MS
    generator()
    assert source.renewals == 1
    source.lost = True
    clock.now_ns += 50 * MS
    moved = generator()
    assert SNOWFLAKE.decode(moved).values["node"] == 2  # lost the lease: took another node
    assert moved > first
    generator.close()
    assert source.released and source.released[-1] >= time_ns_of(moved)


def test_an_unrenewable_lease_stops_at_its_expiry() -> None:
    clock = FakeClock()
    source = LeaseLike(clock)
    generator = make_generator("snowflake", source, clock=clock, sleep=clock.sleep)
    generator()
    source.unreachable = True
    clock.now_ns += 50 * MS
    generator()  # past renew_after: renewal fails, but the lease is still valid
    clock.now_ns += 40 * MS
    with pytest.raises(NodeError, match=r"expired and could not be renewed.*database down"):
        generator()


# -- the compiled hot path -------------------------------------------------------------------------


def _scripted_run(generator_class: type[TimeGenerator], node: int) -> list[int]:
    """A clock that moves, stalls, steps back and jumps, with single calls and take()."""
    clock = FakeClock()
    generator = generator_class(
        "snowflake", node=node, clock=clock, sleep=clock.sleep, max_skew_ns=3 * MS
    )
    ids: list[int] = []
    for step in range(3000):
        ids.append(generator())
        if step % 7 == 0:
            clock.now_ns += 250_000
        if step % 500 == 0:
            clock.now_ns -= 2 * MS
        if step % 900 == 0:
            ids += generator.take(5000)
    return ids


@pytest.mark.skipif(not COMPILED, reason=NEEDS["compiled core"])
def test_compiled_and_pure_cores_issue_the_same_ids() -> None:
    compiled = _scripted_run(TimeGenerator, node=11)
    pure = _scripted_run(PureTimeGenerator, node=12)
    assert [value - (11 << 12) for value in compiled] == [value - (12 << 12) for value in pure]
    assert_strictly_increasing(compiled)


def test_the_pure_core_is_forced_by_the_environment() -> None:
    code = "from idfields.generators import COMPILED; print(COMPILED)"
    env = {**os.environ, "IDFIELDS_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "False"


# -- fixed nodes within one process ----------------------------------------------------------------


def test_a_rebuilt_generator_on_the_same_node_never_repeats() -> None:
    clock = FakeClock(START_NS + 10_000 * MS)  # a frozen clock: every ID in one millisecond
    before = make_generator("snowflake", node=901, clock=clock, sleep=clock.sleep).take(100)
    # the first generator is dropped here (as a settings change drops it); its node is fenced
    after = make_generator("snowflake", node=901, clock=clock, sleep=clock.sleep).take(100)
    assert min(after) > max(before)


def test_a_used_counter_block_is_never_handed_out_again() -> None:
    first = make_generator("decimal", StaticNode(generator_id=77, launch_id=65))
    first()
    first.close()
    again = make_generator("decimal", StaticNode(generator_id=77, launch_id=65))
    with pytest.raises(NodeError, match="cannot be renewed"):
        again()
