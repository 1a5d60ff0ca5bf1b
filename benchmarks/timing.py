"""Timing helpers shared by the benchmark modules."""

from __future__ import annotations

import statistics
import time
import timeit
from collections.abc import Callable, Sequence
from typing import TypeVar

from benchmarks.rows import Row

Subject = TypeVar("Subject")
Timing = tuple[float, float]  # wall and client CPU seconds of one run


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


def timed(step: Callable[[], object]) -> Timing:
    """Wall and client CPU seconds of one call. The CPU figure is this process's own work: far
    less moved by other load."""
    started, cpu = time.perf_counter(), time.process_time()
    step()
    return time.perf_counter() - started, time.process_time() - cpu


def interleaved(
    subjects: Sequence[Subject], repeats: int, step: Callable[[Subject], Timing]
) -> dict[Subject, list[Timing]]:
    """``repeats`` runs of each subject, alternating the order: all see the same load."""
    timings: dict[Subject, list[Timing]] = {subject: [] for subject in subjects}
    for repeat in range(repeats):
        for subject in subjects[:: 1 if repeat % 2 else -1]:
            timings[subject].append(step(subject))
    return timings


def per_row_rows(
    group: str,
    count: int,
    baseline: tuple[str, list[Timing]],
    ours: tuple[str, list[Timing]],
    target: float,
) -> list[Row]:
    """Microseconds per row of ``count``-row runs, ours against the baseline: wall time (held to
    ``target``), then client CPU in a group of its own (no target)."""
    (baseline_name, baseline_runs), (our_name, our_runs) = baseline, ours
    rows: list[Row] = []
    for suffix, index, goal in (("", 0, target), (", client CPU", 1, None)):
        rows += [
            _best_run(group + suffix, baseline_name, baseline_runs, index, count, None, None),
            _best_run(group + suffix, our_name, our_runs, index, count, baseline_name, goal),
        ]
    return rows


def _best_run(
    group: str,
    name: str,
    runs: list[Timing],
    index: int,
    count: int,
    baseline: str | None,
    target: float | None,
) -> Row:
    """The best run as the value (load on a shared machine only adds time), the median noted."""
    spent = [run[index] / count * 1e6 for run in runs]
    return Row(
        group=group,
        name=name,
        value=min(spent),
        unit="us/row",
        baseline=baseline,
        target=target,
        note=f"median {statistics.median(spent):.1f} of {len(spent)}",
    )
