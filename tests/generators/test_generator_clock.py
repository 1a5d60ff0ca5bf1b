"""The clock under threads: NTP steps it back while several threads issue."""

from __future__ import annotations

import threading
import time

import pytest
from generator_support import CORES, MS, StuckClock, fresh_node

from idfields import ClockMovedBackwards
from idfields.generators import TimeGenerator

pytestmark = pytest.mark.core

MAX_WAIT_NS = 1000 * MS


@pytest.mark.slow
@pytest.mark.parametrize("core", CORES)
def test_threads_after_a_step_back_wait_within_max_wait_and_never_raise(
    core: type[TimeGenerator],
) -> None:
    shift = [0]

    def clock() -> int:
        return time.time_ns() - shift[0]

    generator = core(
        "snowflake", node=fresh_node(), clock=clock, max_skew_ns=MS, max_wait_ns=MAX_WAIT_NS
    )
    generator.take(10)
    shift[0] = 600 * MS  # NTP steps the clock back 0.6 s: about 0.6 s to wait, below max_wait
    errors: list[BaseException] = []
    slowest: list[float] = []
    issued: list[list[int]] = []

    def issue() -> None:
        ids, longest = [], 0.0
        for _ in range(500):
            began = time.perf_counter()
            try:
                ids.append(generator())
            except ClockMovedBackwards as error:
                errors.append(error)
            longest = max(longest, time.perf_counter() - began)
        slowest.append(longest)
        issued.append(ids)

    threads = [threading.Thread(target=issue) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [value for ids in issued for value in ids]
    seen = f"{len(errors)} spurious ClockMovedBackwards, a call blocked {max(slowest):.2f} s"
    assert not errors and max(slowest) < MAX_WAIT_NS / 1e9 + 0.2, seen
    assert len(set(everything)) == len(everything) == 2000


@pytest.mark.parametrize("core", CORES)
def test_max_wait_bounds_the_time_actually_slept(core: type[TimeGenerator]) -> None:
    """A stuck clock raises ClockMovedBackwards after max_wait instead of hanging."""
    clock = StuckClock()
    generator = core(
        "snowflake",
        node=fresh_node(),
        clock=clock,
        sleep=clock.sleep,
        max_skew_ns=100 * MS,
        max_wait_ns=70 * MS,
    )
    with pytest.raises(ClockMovedBackwards):
        generator.take(1_000_000)  # more than the 100 ms run-ahead holds: it has to wait
    assert clock.slept_ns <= 70 * MS, f"slept {clock.slept_ns / 1e9:.3f} s against 0.070 s"


@pytest.mark.parametrize("core", CORES)
def test_a_sleeping_call_does_not_hold_the_lock(core: type[TimeGenerator]) -> None:
    """While one call waits for a stuck clock, another thread can close the generator."""
    clock = StuckClock()
    slept = threading.Event()
    release = threading.Event()

    def sleep(seconds: float) -> None:
        slept.set()
        release.wait(5)
        clock.sleep(seconds)

    generator = core(
        "snowflake", node=fresh_node(), clock=clock, sleep=sleep, max_skew_ns=MS, max_wait_ns=MS
    )
    outcome: list[BaseException] = []

    def take() -> None:
        try:
            generator.take(4096 * 10)
        except Exception as error:
            outcome.append(error)

    thread = threading.Thread(target=take)
    thread.start()
    assert slept.wait(5)
    acquired = generator._lock.acquire(timeout=1)
    if acquired:
        generator._lock.release()
    release.set()
    thread.join()
    assert acquired, "take() slept holding the lock"
