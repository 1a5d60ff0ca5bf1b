"""The generator against its peers: ns per ID of one call and of bulk calls, and take() throughput.

Every figure is measured in paired rounds with the peers (:mod:`benchmarks.timing`). Targets:
the compiled single call no slower than uuid_utils.uuid7 and ahead of every app-side peer, the
decimal layout too (<= 1.0x uuid7); the pure-Python call no slower than snowflake-id's unlocked
``next()``, timed alone and in a plain loop; ``take(100_000)`` in a loop sustains >= 95% of
snowflake's capacity (4,096,000 IDs/s per node) without running ahead of the clock past the skew
bound.

The pure path is chosen once, at import, so its group runs in a child process with
``IDFIELDS_PURE_PYTHON=1`` (peers and all: a ratio is only taken within one process).
Peers are imported inside their factories: a missing one gives a row with no value and the
reason, never a failed run. ``python -m benchmarks.bench_generator [--quick]`` runs it alone.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from itertools import count, islice
from pathlib import Path

from benchmarks import Skip
from benchmarks.report import run_alone
from benchmarks.rows import Row, make_row
from benchmarks.timing import Paired, lead_row, load_average, ns_per_call, paired, paired_rows
from idfields import StaticNode, get_layout, make_generator
from idfields.generators import COMPILED
from idfields.nodes import NodeSource

CALL_C = "generator: single call, compiled (C)"
CALL_PURE = "generator: single call, pure Python"
BULK = "generator: bulk, ns per ID"
TAKE = "generator: take(100_000) sustained"
NS_PER_ID = "ns/ID"

SNOWFLAKE_ID = "snowflake-id next() (unlocked)"
UUID7 = "uuid_utils.uuid7()"
TSIDPY = "tsidpy TSIDGenerator.create()"
ULID = "python-ulid ULID()"
BATCH = 100_000
# take() waits ~25 ms (one batch of ticks) at a time: "full" means within twice that of the bound
_FULL_MARGIN_NS = 50_000_000
SKEW_NS = 1_000_000_000  # the generator's documented default max_skew, passed explicitly
SONYFLAKE_MACHINES = 1024  # turbo mode: 26M IDs/s; one machine ID alone is capped at 25,600

Factory = Callable[[], Callable[[], object]]
_nodes = count(100)  # a fresh node per generator: a reused one starts after its predecessor's IDs


@dataclass(frozen=True)
class Subject:
    """Something that makes IDs; ``make`` builds it (ImportError when the peer is missing)."""

    name: str
    make: Factory
    note: str = ""


# Ours, timed as the bound ``gen.__call__`` like snowflake-id's bound ``__next__``; plain ``gen()``
# is an extra row. A generator faster than its layout's capacity runs ahead of the clock and,
# past the skew bound, waits; so every round gets a fresh generator on a node of its own.
OURS: dict[str, Callable[[int], NodeSource]] = {
    "snowflake": StaticNode,
    "traceid": StaticNode,
    "decimal": lambda node: StaticNode(generator_id=node, launch_id=1),
}
INSTANCE_CALL = "snowflake, called as gen()"


def ours_name(layout: str, compiled: bool) -> str:
    return f"idfields {layout} [{'C' if compiled else 'pure Python'}]"


def _ours(layout: str, bound: bool = True) -> Factory:
    def make() -> Callable[[], object]:
        generator = make_generator(layout, OURS[layout](next(_nodes)))
        generator()  # take the node before timing: the first call is the slow path
        return generator.__call__ if bound else generator

    return make


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
    Subject(SNOWFLAKE_ID, _snowflake_id, note="pure Python, no lock; None when a ms is used up"),
    Subject(UUID7, _uuid7, note="Rust"),
    Subject("fastuuid7.uuid7()", _fastuuid7, note="C"),
    Subject("sonyflake-turbo next()", _sonyflake, note=f"C, {SONYFLAKE_MACHINES} machine IDs"),
    Subject(TSIDPY, _tsidpy, note="pure Python, defaults"),
    Subject(ULID, _ulid, note="pure Python"),
    Subject("uuid.uuid4()", lambda: uuid.uuid4),
    Subject("heeranjid", _heeranjid),
]
PURE_PEERS = (SNOWFLAKE_ID, TSIDPY, ULID)  # the ones a pure-Python path can fairly be held to


def _empty_call() -> Callable[[], object]:
    def call() -> None:
        pass

    return call


def _locked_call() -> Callable[[], object]:
    lock = threading.Lock()

    def call() -> None:
        with lock:
            pass

    return call


# What a lock would cost a pure-Python call: the difference of these two, measured beside it.
EMPTY_CALL, LOCKED_CALL = "an empty Python call", "a Python call taking a threading.Lock"
LOCK_SUBJECTS = [Subject(EMPTY_CALL, _empty_call), Subject(LOCKED_CALL, _locked_call)]


def _lock_note(result: Paired[str]) -> str:
    spent = result.median(LOCKED_CALL) - result.median(EMPTY_CALL)
    return (
        "takes no lock: it draws the next ID from the block the slow path published (one step "
        f"under the GIL); a threading.Lock would add {spent:.0f} ns (the two Python calls "
        "below), as snowflake-id's next() takes none either. Its state lives in slots (a "
        "generator has more attributes than an instance dict shares keys for), the clock is read "
        "into a local, and the fork mark (idfields._forking.live) is read as a 0-d bool view"
    )


def _available(subjects: list[Subject]) -> tuple[dict[str, Subject], list[Row]]:
    """The subjects that can run here, and a no-value row (with the reason) for each other."""
    usable: dict[str, Subject] = {}
    missing: list[Row] = []
    for subject in subjects:
        try:
            subject.make()
        except ImportError as error:
            note = f"not installed: {error.name} (.venv/bin/pip install -e '.[bench]')"
            missing.append(make_row("", subject.name, None, NS_PER_ID, None, note=note))
            continue
        except Skip as error:
            missing.append(make_row("", subject.name, None, NS_PER_ID, None, note=str(error)))
            continue
        usable[subject.name] = subject
    return usable, missing


def _with_group(rows: list[Row], group: str) -> list[Row]:
    return [{**row, "group": group} for row in rows]


def single_call_group(quick: bool, compiled: bool) -> list[Row]:
    """ns per call of ours and every peer, in paired rounds, in this process's hot path."""
    calls, rounds = (20_000, 3) if quick else (100_000, 15)
    group, baseline = (CALL_C, UUID7) if compiled else (CALL_PURE, SNOWFLAKE_ID)
    layouts = {ours_name(layout, compiled): _ours(layout) for layout in OURS}
    ours = [Subject(name, make) for name, make in layouts.items()]
    ours.append(Subject(ours_name(INSTANCE_CALL, compiled), _ours("snowflake", bound=False)))
    usable, missing = _available(ours + PEERS + ([] if compiled else LOCK_SUBJECTS))

    def measure(name: str) -> float:
        return ns_per_call(usable[name].make(), calls)

    for name in usable:  # warm-up: a peer's first calls may initialise it (not a round)
        ns_per_call(usable[name].make(), calls // 10)

    result: Paired[str] = paired(list(usable), rounds, measure)
    snowflake, decimal = ours_name("snowflake", compiled), ours_name("decimal", compiled)
    targets = {snowflake: 1.0, **({decimal: 1.0} if compiled else {})}
    notes = {subject.name: subject.note for subject in PEERS if subject.note}
    notes[ours_name(INSTANCE_CALL, compiled)] = "the public call; not a target"
    if not compiled:
        notes[snowflake] = _lock_note(result)
    rows = paired_rows(group, NS_PER_ID, result, baseline, targets=targets, notes=notes)
    peers = [subject.name for subject in PEERS] if compiled else list(PURE_PEERS)
    lead = lead_row(group, snowflake, peers, result, NS_PER_ID)
    return rows + ([lead] if lead else []) + _with_group(missing, group)


PLAIN_LOOP = "generator: plain loop, pure Python"
PLAIN_OURS, PLAIN_SNOWFLAKE_ID = "for _ in range(n): gen()", "for _ in range(n): next(sf)"


def _loop_ours(calls: int) -> float:
    """ns per ``gen()`` in a loop as a user writes it, in this process's CPU time (what the
    machine's other processes take from the wall is not the call's)."""
    gen = _ours("snowflake", bound=False)()
    started = time.process_time()
    for _ in range(calls):
        gen()
    return (time.process_time() - started) / calls * 1e9


def _loop_snowflake_id(calls: int) -> float:
    """:func:`_loop_ours` for snowflake-id: ``next(sf)``, as its README iterates it."""
    from snowflake import SnowflakeGenerator

    sf = SnowflakeGenerator(1)
    started = time.process_time()
    for _ in range(calls):
        next(sf)
    return (time.process_time() - started) / calls * 1e9


def plain_loop_group(quick: bool) -> list[Row]:
    """The pure path against snowflake-id's ``next()`` in a plain loop, paired rounds.

    The harness's single-call group times the bound method under ``timeit`` (its loop is C, the
    call a LOAD_FAST): the call alone. A user's loop calls ``gen()`` on an instance and pays
    the loop and the instance call too: this is the figure a user feels.
    """
    calls, rounds = (50_000, 7) if quick else (200_000, 21)
    loops = {PLAIN_OURS: _loop_ours, PLAIN_SNOWFLAKE_ID: _loop_snowflake_id}
    try:
        _loop_snowflake_id(1)
    except ImportError as error:
        note = f"not installed: {error.name} (.venv/bin/pip install -e '.[bench]')"
        return [make_row(PLAIN_LOOP, PLAIN_SNOWFLAKE_ID, None, NS_PER_ID, None, note=note)]
    result: Paired[str] = paired(list(loops), rounds, lambda name: loops[name](calls))
    notes = {PLAIN_OURS: "CPU time of this process per call, the loop included"}
    return paired_rows(
        PLAIN_LOOP, NS_PER_ID, result, PLAIN_SNOWFLAKE_ID, targets={PLAIN_OURS: 1.0}, notes=notes
    )


def _pure_rows(quick: bool) -> list[Row]:
    """:func:`single_call_group` and :func:`plain_loop_group` of the pure path, in a child with
    IDFIELDS_PURE_PYTHON=1."""
    code = (
        "import json, sys; from benchmarks.bench_generator import plain_loop_group, "
        "single_call_group; quick = sys.argv[1] == 'quick'; "
        "print(json.dumps(single_call_group(quick, compiled=False) + plain_loop_group(quick)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "quick" if quick else "full"],
        env={**os.environ, "IDFIELDS_PURE_PYTHON": "1"},
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=True,
    )
    rows: list[Row] = json.loads(done.stdout)
    return rows


def single_call_rows(quick: bool) -> list[Row]:
    """Both paths: compiled (when built) here, pure in a child."""
    pure = (
        _pure_rows(quick)
        if COMPILED
        else single_call_group(quick, compiled=False) + plain_loop_group(quick)
    )
    if COMPILED:
        return single_call_group(quick, compiled=True) + pure
    note = "C extension not built here (python setup.py build_ext --inplace)"
    missing = make_row(CALL_C, ours_name("snowflake", True), None, NS_PER_ID, UUID7, 1.0, note=note)
    return [*pure, missing]


def _bulk_subjects(n: int) -> list[Subject]:
    def take() -> Callable[[], object]:
        generator = make_generator("snowflake", StaticNode(next(_nodes)))
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
    """ns per ID when asking for many at once (each peer's bulk API), in paired rounds."""
    subjects = _bulk_subjects(BATCH)
    usable, missing = _available(subjects)
    result: Paired[str] = paired(
        list(usable), 3 if quick else 9, lambda name: ns_per_call(usable[name].make(), 1) / BATCH
    )
    baseline = subjects[1].name
    notes = {subject.name: subject.note for subject in subjects if subject.note}
    return paired_rows(BULK, NS_PER_ID, result, baseline, notes=notes) + _with_group(missing, BULK)


def take_rows(quick: bool) -> list[Row]:
    """take(100_000) in a loop: IDs/s per one-second window against capacity, and the largest
    run-ahead.

    A warm-up first fills the run-ahead window (to within one wait of the skew bound), so the
    windows measure the steady state, where the generator waits for the clock, not a burst on
    credit (that burst is what once read as "4.13 M/s", above the 4.096 M/s capacity).
    """
    windows, warmup = (2, 1.0) if quick else (7, 3.0)
    layout = get_layout("snowflake")
    generator = make_generator(layout, StaticNode(next(_nodes)), max_skew_ns=SKEW_NS)
    capacity = layout.ids_per_second or 0
    max_ahead_ns = 0
    last = 0

    def step() -> int:
        nonlocal max_ahead_ns, last
        ids = generator.take(BATCH)
        if ids[0] <= last:
            raise RuntimeError(f"take() went backwards: {ids[0]} after {last}")
        last = ids[-1]
        ahead = (layout.decode(last).time_ns or 0) - time.time_ns()
        max_ahead_ns = max(max_ahead_ns, ahead)
        return ahead

    started = time.perf_counter()
    while time.perf_counter() - started < warmup and step() < SKEW_NS - _FULL_MARGIN_NS:
        pass
    warmed = time.perf_counter() - started
    rates, loads = [], []
    for _ in range(windows):
        loads.append(load_average())
        made, started = 0, time.perf_counter()
        while time.perf_counter() - started < 1.0:
            step()
            made += BATCH
        rates.append(made / (time.perf_counter() - started))
    ratios = [rate / capacity for rate in rates]
    note = f"{windows} windows of 1 s after a {warmed:.1f} s warm-up filling the run-ahead window"
    capped = "snowflake capacity, 1 node"
    ours = make_row(TAKE, f"idfields take({BATCH:_}) loop", statistics.median(rates), "ids/s",
                    capped, 0.95, higher_is_better=True, note=note)  # fmt: skip
    ours["ratio"], ours["spread"] = statistics.median(ratios), [min(ratios), max(ratios)]
    ours["rounds"], ours["load"] = windows, [min(loads), max(loads)]
    return [
        make_row(TAKE, capped, capacity, "ids/s", None),
        ours,
        make_row(TAKE, "max_skew bound", SKEW_NS / 1e6, "ms", None),
        make_row(TAKE, "largest run-ahead seen", max_ahead_ns / 1e6, "ms", "max_skew bound", 1.0,
                 note="last ID's time minus the wall clock, after each take()"),
    ]  # fmt: skip


def run(quick: bool = False) -> list[Row]:
    return single_call_rows(quick) + bulk_rows(quick) + take_rows(quick)


if __name__ == "__main__":
    run_alone(run)
