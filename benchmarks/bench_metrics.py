"""The cost of a metrics hook when nothing listens: ``idfields._events.emit()`` with no subscriber.

The slow paths (a new node, a renewal, a wait for the clock) call ``emit``; the hot path never
does. So the figure to know is what an unheard event costs: here against an empty Python
function of the same signature (the least any hook can cost), and against one ``gen()`` call
for scale, in paired rounds. No target. ``python -m benchmarks.bench_metrics [--quick]``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from benchmarks.report import run_alone
from benchmarks.rows import Row
from benchmarks.timing import Paired, ns_per_call, paired, paired_rows
from idfields import StaticNode, _events, make_generator

GROUP = "metrics hook, nobody listening"
EMPTY = "empty function call"


def _empty(event: str, value: float = 1.0, **attributes: str) -> None:
    """What the cheapest possible hook costs: a call that does nothing."""


def run(quick: bool = False) -> list[Row]:
    generator = make_generator("snowflake", StaticNode(900))
    generator()
    subjects: dict[str, Callable[[], object]] = {
        EMPTY: partial(_empty, "lease.renewed", 0.001, layout="snowflake"),
        "_events.emit(), no listener": partial(
            _events.emit, "lease.renewed", 0.001, layout="snowflake"
        ),
        "gen(), for scale": generator,
    }
    calls, rounds = (20_000, 3) if quick else (200_000, 11)
    result: Paired[str] = paired(list(subjects), rounds, lambda n: ns_per_call(subjects[n], calls))
    note = {"gen(), for scale": "emit() is on slow paths only, never per ID"}
    return paired_rows(GROUP, "ns", result, EMPTY, notes=note)


if __name__ == "__main__":
    run_alone(run)
