"""Timing helpers shared by the benchmark modules."""

from __future__ import annotations

import timeit
from collections.abc import Callable


def ns_per_call(fn: Callable[[], object], *, min_seconds: float, repeats: int) -> float:
    """Nanoseconds per call of ``fn`` in a tight loop: the best of ``repeats`` runs.

    The minimum, not the mean: other work on a shared 2-core machine only ever adds time, so the
    fastest run is the closest to the code's own cost. Each run lasts at least ``min_seconds``.
    """
    timer = timeit.Timer("f()", setup="f = _f", globals={"_f": fn})  # f is a local: LOAD_FAST
    calls = 1
    while timer.timeit(calls) < min_seconds:
        calls *= 2
    return min(timer.repeat(repeats, calls)) / calls * 1e9


def ns_per_fresh_call(
    make: Callable[[], Callable[[], object]], *, calls: int, repeats: int
) -> float:
    """Like :func:`ns_per_call`, but each run times ``calls`` calls of a freshly made subject.

    For our generators: one faster than its layout's capacity runs ahead of the clock and, past
    the skew bound, waits; a long run would then time the capacity, not the call. A fresh
    generator per run (on its own node) keeps every run within its run-ahead budget.
    """
    best = float("inf")
    for _ in range(repeats):
        timer = timeit.Timer("f()", setup="f = _f", globals={"_f": make()})
        best = min(best, timer.timeit(calls) / calls)
    return best * 1e9
