"""The generator against its peers: ns per ID of one call and of bulk calls, and take() throughput.

Targets (issues 2 and 8): our thread-safe single call no slower than snowflake-id's unlocked
``next()``; ``take(100_000)`` in a loop sustains >= 95% of snowflake's capacity (4,096,000 IDs/s
per node) without running ahead of the wall clock past the skew bound.

Peers are imported inside their factories: a missing one gives a row with no value and the
reason, never a failed run. ``python -m benchmarks.bench_generator [--quick]`` runs it alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from benchmarks import Skip
from benchmarks.report import run_alone
from benchmarks.rows import Row, make_row
from benchmarks.timing import ns_per_call, ns_per_fresh_call
from idfields import StaticNode, get_layout, make_generator
from idfields.generators import COMPILED
from idfields.nodes import NodeSource

CALL = "generator: single call"
CALL_VS_UUID7 = "generator: single call vs uuid_utils.uuid7"
BULK = "generator: bulk, ns per ID"
TAKE = "generator: take(100_000) sustained"
NS_PER_ID = "ns/ID"

SNOWFLAKE_ID = "snowflake-id next() (unlocked)"
UUID7 = "uuid_utils.uuid7()"
BATCH = 100_000
# take() waits ~25 ms (one batch of ticks) at a time: "full" means within twice that of the bound
_FULL_MARGIN_NS = 50_000_000
SKEW_NS = 1_000_000_000  # the generator's documented default max_skew, passed explicitly
SONYFLAKE_MACHINES = 1024  # turbo mode: 26M IDs/s; one machine ID alone is capped at 25,600

Factory = Callable[[], Callable[[], object]]


@dataclass(frozen=True)
class Subject:
    """Something that makes IDs; ``make`` builds it (ImportError when the peer is missing)."""

    name: str
    make: Factory
    note: str = ""


# Ours, timed as the bound ``gen.__call__`` like snowflake-id's bound ``__next__``; plain ``gen()``
# costs the same with the C core and ~50 ns more in pure Python (the type's call slot), shown in
# an extra row. Each run gets a fresh generator on its own node (see ns_per_fresh_call).
OURS: dict[str, Callable[[int], NodeSource]] = {
    "snowflake": lambda run: StaticNode(100 + run),
    "traceid": lambda run: StaticNode(100 + run),
    "decimal": lambda run: StaticNode(generator_id=100 + run, launch_id=1),
}


INSTANCE_CALL = "snowflake, called as gen()"


def _ours(layout: str, bound: bool = True) -> Callable[[], Callable[[], object]]:
    runs = iter(range(500 * bound, 500 + 500 * bound))

    def make() -> Callable[[], object]:
        generator = make_generator(layout, OURS[layout](next(runs)))
        generator()  # take the node before timing: the first call is the slow path
        return generator.__call__ if bound else generator

    return make


def measure_ours(quick: bool) -> dict[str, float]:
    """ns per ``gen()`` for each of our layouts, with the hot path this process imported."""
    calls, repeats = (100_000, 3) if quick else (300_000, 7)
    makers = {layout: _ours(layout) for layout in OURS}
    makers[INSTANCE_CALL] = _ours("snowflake", bound=False)
    return {
        name: ns_per_fresh_call(make, calls=calls, repeats=repeats) for name, make in makers.items()
    }


def _measure_pure(quick: bool) -> dict[str, float]:
    """The same in a child with IDFIELDS_PURE_PYTHON=1: the path is chosen once, at import."""
    code = (
        "import json, sys; from benchmarks.bench_generator import measure_ours; "
        "print(json.dumps(measure_ours(sys.argv[1] == 'quick')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "quick" if quick else "full"],
        env={**os.environ, "IDFIELDS_PURE_PYTHON": "1"},
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def _uuid7() -> Callable[[], object]:
    import uuid_utils

    return uuid_utils.uuid7


def _snowflake_id() -> Callable[[], object]:
    from snowflake import SnowflakeGenerator  # type: ignore[import-untyped]

    next_id: Callable[[], object] = SnowflakeGenerator(1).__next__
    return next_id


def _tsidpy() -> Callable[[], object]:
    from tsidpy import TSIDGenerator

    return TSIDGenerator(node=1).create


def _ulid() -> Callable[[], object]:
    from ulid import ULID

    return ULID


def _sonyflake_instance() -> Callable[[int], list[int]]:
    from sonyflake_turbo import SonyFlake

    return SonyFlake(*range(SONYFLAKE_MACHINES))


def _sonyflake() -> Callable[[], object]:
    next_id: Callable[[], object] = _sonyflake_instance().__next__  # type: ignore[attr-defined]
    return next_id


def _fastuuid7() -> Callable[[], object]:
    import fastuuid7

    return fastuuid7.uuid7


def _heeranjid() -> Callable[[], object]:
    import heeranjid  # noqa: F401  (installed or not decides the message)

    raise Skip("no in-process generator: HeerIds are made by its SQL functions")


PEERS = [
    Subject(SNOWFLAKE_ID, _snowflake_id, note="no lock; returns None when a ms is used up"),
    Subject(UUID7, _uuid7, note="Rust"),
    Subject("fastuuid7.uuid7()", _fastuuid7, note="C"),
    Subject("sonyflake-turbo next()", _sonyflake, note=f"C, {SONYFLAKE_MACHINES} machine IDs"),
    Subject("tsidpy TSIDGenerator.create()", _tsidpy),
    Subject("python-ulid ULID()", _ulid),
    Subject("uuid.uuid4()", lambda: uuid.uuid4),
    Subject("heeranjid", _heeranjid),
]


def _build(subject: Subject) -> tuple[Callable[[], object] | None, str]:
    """The callable, or None and the reason it cannot run here."""
    try:
        return subject.make(), subject.note
    except ImportError as error:
        return None, f"not installed: {error.name} (.venv/bin/pip install -e '.[bench]')"
    except Skip as error:
        return None, str(error)


def ours_name(layout: str, compiled: bool) -> str:
    return f"idfields {layout} [{'C' if compiled else 'pure Python'}]"


def single_call_rows(quick: bool) -> list[Row]:
    """ns per ID of one call: the pure path against snowflake-id, the C path against uuid7."""
    min_seconds, repeats = (0.02, 3) if quick else (0.1, 7)
    peers: list[Row] = []
    for subject in PEERS:
        fn, note = _build(subject)
        value = None if fn is None else ns_per_call(fn, min_seconds=min_seconds, repeats=repeats)
        base = None if subject.name == SNOWFLAKE_ID else SNOWFLAKE_ID
        peers.append(make_row(CALL, subject.name, value, NS_PER_ID, base, note=note))
    here = measure_ours(quick)
    paths = {COMPILED: here, False: _measure_pure(quick) if COMPILED else here}
    not_built = "C extension not built here; see the pure row"
    ours: list[Row] = []
    for compiled, group, baseline in ((False, CALL, SNOWFLAKE_ID), (True, CALL_VS_UUID7, UUID7)):
        for layout in OURS:
            value = paths[compiled][layout] if compiled in paths else None
            note = not_built if value is None else ""
            name = ours_name(layout, compiled)
            ours.append(make_row(group, name, value, NS_PER_ID, baseline, 1.0, note=note))
        value = paths[compiled][INSTANCE_CALL] if compiled in paths else None
        name = ours_name(INSTANCE_CALL, compiled)
        note = "the public call; not a target"
        ours.append(make_row(group, name, value, NS_PER_ID, baseline, note=note))
        other = ours_name("snowflake", not compiled)
        value = paths[not compiled]["snowflake"] if (not compiled) in paths else None
        note = "the other path, for comparison"
        ours.append(make_row(group, other, value, NS_PER_ID, baseline, note=note))
    uuid7 = next(row for row in peers if row["name"] == UUID7)
    first = [row for row in ours if row["group"] == CALL]
    rest = [row for row in ours if row["group"] != CALL]
    return first + peers + rest + [{**uuid7, "group": CALL_VS_UUID7, "baseline": None}]


def _bulk_subjects(n: int) -> list[Subject]:
    def take() -> Callable[[], object]:
        generator = make_generator("snowflake", StaticNode(4))
        generator()
        return lambda: generator.take(n)

    def snowflake_id() -> Callable[[], object]:
        from snowflake import SnowflakeGenerator

        generator = SnowflakeGenerator(1)
        return lambda: list(islice(generator, n))

    def fastuuid7_many() -> Callable[[], object]:
        import fastuuid7

        return lambda: fastuuid7.uuid7_many(n)

    def sonyflake_many() -> Callable[[], object]:
        generator = _sonyflake_instance()
        return lambda: generator(n)

    return [
        Subject(f"idfields take({n:_})", take, note="burst within the run-ahead bound"),
        Subject(f"snowflake-id list(islice(gen, {n:_}))", snowflake_id),
        Subject(f"fastuuid7.uuid7_many({n:_})", fastuuid7_many),
        Subject(f"sonyflake-turbo sf({n:_})", sonyflake_many, note="capped by its capacity"),
    ]


def bulk_rows(quick: bool) -> list[Row]:
    """ns per ID when asking for many at once (each peer's bulk API)."""
    subjects = _bulk_subjects(BATCH)
    baseline = subjects[1].name
    rows = []
    for subject in subjects:
        fn, note = _build(subject)
        per_batch = (
            None if fn is None else ns_per_call(fn, min_seconds=0, repeats=3 if quick else 5)
        )
        value = None if per_batch is None else per_batch / BATCH
        base = None if subject.name == baseline else baseline
        rows.append(make_row(BULK, subject.name, value, NS_PER_ID, base, note=note))
    return rows


def take_rows(quick: bool) -> list[Row]:
    """take(100_000) in a loop: sustained IDs/s against capacity, and the largest run-ahead.

    A warm-up first fills the run-ahead window (to within one wait of the skew bound), so the
    measured window is the steady state, where the generator waits for the clock, not a burst
    on credit.
    """
    seconds, warmup = (1.0, 1.0) if quick else (5.0, 3.0)
    layout = get_layout("snowflake")
    generator = make_generator(layout, StaticNode(5), max_skew_ns=SKEW_NS)
    capacity = layout.ids_per_second or 0
    max_ahead_ns = 0
    last = 0

    def step() -> int:
        nonlocal max_ahead_ns, last
        ids = generator.take(BATCH)
        if ids[0] <= last:
            raise RuntimeError(f"take() went backwards: {ids[0]} after {last}")
        last = ids[-1]
        stamped = layout.decode(last).time_ns or 0
        ahead = stamped - time.time_ns()
        max_ahead_ns = max(max_ahead_ns, ahead)
        return ahead

    started = time.perf_counter()
    while time.perf_counter() - started < warmup and step() < SKEW_NS - _FULL_MARGIN_NS:
        pass
    warmed = time.perf_counter() - started
    count = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        step()
        count += BATCH
    rate = count / (time.perf_counter() - started)
    skew_ms = SKEW_NS / 1e6
    note = f"{seconds:.0f} s after a {warmed:.1f} s warm-up filling the run-ahead window"
    return [
        make_row(TAKE, "snowflake capacity, 1 node", capacity, "ids/s", None),
        make_row(TAKE, f"idfields take({BATCH:_}) loop", rate, "ids/s",
                 "snowflake capacity, 1 node", 0.95, higher_is_better=True, note=note),
        make_row(TAKE, "max_skew bound", skew_ms, "ms", None),
        make_row(TAKE, "largest run-ahead seen", max_ahead_ns / 1e6, "ms", "max_skew bound", 1.0,
                 note="last ID's time minus the wall clock, after each take()"),
    ]  # fmt: skip


def run(quick: bool = False) -> list[Row]:
    return single_call_rows(quick) + bulk_rows(quick) + take_rows(quick)


if __name__ == "__main__":
    run_alone(run)
