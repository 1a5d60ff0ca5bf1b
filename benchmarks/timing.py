"""Paired, interleaved measurement: every figure of the report comes from here.

A shared 2-core machine moves from idle to busy within seconds, so a figure measured alone (or
the best of one or two runs) says more about the moment than about the code: snowflake-id once
moved from 263 to 470 ns between two runs. Here every subject of a comparison is measured once
per *round*, the order alternating from round to round, and each ratio is taken within a round
(ours / baseline, both under the same load). The reported ratio is the median of those paired
ratios, with their minimum and maximum, and the machine's load average sampled every round.

Every measurement starts from the same collector state: a full ``gc.collect()`` before it,
outside its timer. Otherwise a collection the previous subject's garbage made due lands in the
next subject's run: on SQLAlchemy's ORM flush, 5,000 rows, that moved a paired ratio between
0.64x and 1.26x; collected first, each run pays for the collections its own allocations cause
(the collector stays on: that cost is the path's), and the range was 0.73x-0.90x.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
import timeit
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from benchmarks.rows import Row, make_row

Subject = TypeVar("Subject", bound=Hashable)


@dataclass
class Paired(Generic[Subject]):
    """Per-round values of every subject, and the 1-minute load average seen at each round."""

    values: dict[Subject, list[float]]
    load: list[float] = field(default_factory=list)

    def median(self, subject: Subject) -> float:
        return statistics.median(self.values[subject])

    def ratios(self, subject: Subject, baseline: Subject) -> list[float]:
        """``subject / baseline`` within each round (both measured under the same load)."""
        pairs = zip(self.values[subject], self.values[baseline], strict=True)
        return [mine / base for mine, base in pairs]


def load_average() -> float:
    """The 1-minute load average (runnable processes); 0.0 where the OS has none."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def paired(
    subjects: Sequence[Subject], rounds: int, measure: Callable[[Subject], float]
) -> Paired[Subject]:
    """``rounds`` rounds of ``measure(subject)`` for every subject; the order is reversed every
    other round and rotated by one each round, so no subject always runs first (warm caches) or
    last (after the others' garbage), and each starts with no garbage left to collect."""
    result: Paired[Subject] = Paired({subject: [] for subject in subjects})
    count = len(subjects)
    for index in range(rounds):
        order = list(subjects[index % count :]) + list(subjects[: index % count])
        if index % 2:
            order.reverse()
        result.load.append(load_average())
        for subject in order:
            gc.collect()
            result.values[subject].append(measure(subject))
    return result


def paired_wall_and_cpu(
    subjects: Sequence[Subject], rounds: int, measure: Callable[[Subject], tuple[float, float]]
) -> tuple[Paired[Subject], Paired[Subject]]:
    """:func:`paired` of a measure giving (wall, client CPU): both series, from the same runs.

    Client CPU is this process's own work, which the other processes of a busy machine move far
    less than wall time: where two subjects differ only in client-side work (app-side keys), it
    is the steadier figure; wall time also counts the server and the waits.
    """
    cpu: dict[Subject, list[float]] = {subject: [] for subject in subjects}

    def wall(subject: Subject) -> float:
        spent, used = measure(subject)
        cpu[subject].append(used)
        return spent

    result = paired(subjects, rounds, wall)
    return result, Paired(cpu, result.load)


def ns_per_call(fn: Callable[[], object], calls: int) -> float:
    """Nanoseconds per call of ``fn`` over ``calls`` calls in a tight loop (one run)."""
    timer = timeit.Timer("f()", setup="f = _f", globals={"_f": fn})  # f is a local: LOAD_FAST
    return timer.timeit(calls) / calls * 1e9


def seconds(step: Callable[[], object]) -> float:
    """Wall seconds of one call of ``step``."""
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def wall_and_cpu(step: Callable[[], object]) -> tuple[float, float]:
    """Wall and this process's CPU seconds of one call of ``step``."""
    started, cpu = time.perf_counter(), time.process_time()
    step()
    return time.perf_counter() - started, time.process_time() - cpu


def paired_rows(
    group: str,
    unit: str,
    result: Paired[str],
    baseline: str | None,
    *,
    targets: Mapping[str, float] | None = None,
    notes: Mapping[str, str] | None = None,
    higher_is_better: bool = False,
) -> list[Row]:
    """One row per subject: the median value, and against ``baseline`` the median of the paired
    ratios with their range, the target where one is given, and the load of the rounds."""
    targets, notes = targets or {}, notes or {}
    rows = []
    for name in result.values:
        base = None if name == baseline else baseline  # None: no comparison
        rows.append(
            measured_row(
                group, name, unit, result, base, targets.get(name),
                note=notes.get(name), higher_is_better=higher_is_better,
            )
        )  # fmt: skip
    return rows


def measured_row(
    group: str,
    name: str,
    unit: str,
    result: Paired[str],
    baseline: str | None,
    target: float | None = None,
    *,
    note: str | None = None,
    higher_is_better: bool = False,
    value_of: str | None = None,
) -> Row:
    """The row of ``value_of`` (default ``name``) against ``baseline``, from paired rounds."""
    subject = value_of or name
    row = make_row(
        group, name, result.median(subject), unit, baseline, target,
        higher_is_better=higher_is_better or None, note=note,
    )  # fmt: skip
    row["rounds"] = len(result.values[subject])
    if result.load:
        row["load"] = [min(result.load), max(result.load)]
    if baseline is not None and baseline in result.values:  # else judged "not measured"
        ratios = result.ratios(subject, baseline)
        row["ratio"] = statistics.median(ratios)
        row["spread"] = [min(ratios), max(ratios)]
    return row


def lead_row(
    group: str,
    ours: str,
    peers: Sequence[str],
    result: Paired[str],
    unit: str,
    *,
    higher_is_better: bool = False,
) -> Row | None:
    """``ours`` against the fastest of ``peers``, target 1.0: "ahead of every peer" holds when
    this one is met. None when no peer was measured. ``higher_is_better``: a rate (tps), whose
    fastest peer has the highest value.

    The fastest peer is picked on the odd rounds and compared with on the even ones. Picked and
    compared on the same rounds, the bar would be whichever of several tied peers had the
    luckiest rounds, and a tie would read as a loss."""
    measured = [peer for peer in peers if peer in result.values]
    if not measured:
        return None
    picking, comparing = _halves(result)
    fastest = (max if higher_is_better else min)(measured, key=picking.median)
    return measured_row(
        group, f"{ours} vs fastest peer", unit, comparing, fastest, 1.0, value_of=ours,
        note=f"fastest peer here: {fastest} (picked on the odd rounds, compared on the even "
        f"ones)", higher_is_better=higher_is_better,
    )  # fmt: skip


def _halves(result: Paired[Subject]) -> tuple[Paired[Subject], Paired[Subject]]:
    """(odd rounds, even rounds) of ``result``; a single round serves as both."""
    if min(len(values) for values in result.values.values()) < 2:
        return result, result
    odd = Paired({s: values[1::2] for s, values in result.values.items()}, result.load[1::2])
    even = Paired({s: values[0::2] for s, values in result.values.items()}, result.load[0::2])
    return odd, even
