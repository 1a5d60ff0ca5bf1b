"""Clocks injected into the code under test, so timing tests step time instead of sleeping."""

from __future__ import annotations

import time

MS = 1_000_000
# A fixed point for fake clocks, after anything real-clock tests issue (2030-03-17).
START_NS = 1_900_000_000_000 * MS


class FakeClock:
    """An injectable wall clock: steps where the test says, and sleeping moves it forward."""

    def __init__(self, now_ns: int = START_NS) -> None:
        self.now_ns = now_ns
        self.slept_ns = 0

    @classmethod
    def at_real_time(cls) -> FakeClock:
        """A fake clock starting at the real time (for code that also meets a database's)."""
        return cls(time.time_ns())

    def __call__(self) -> int:
        return self.now_ns

    def advance(self, seconds: float) -> None:
        self.now_ns += round(seconds * 1e9)

    def sleep(self, seconds: float) -> None:
        step = max(1, round(seconds * 1e9))
        self.now_ns += step
        self.slept_ns += step
