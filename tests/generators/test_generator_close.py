"""close() while the generator is in use, and a closed generator called again."""

from __future__ import annotations

import threading
import time

import pytest
from generator_support import CORES, COUNTER_CORES, MS, START_NS, FakeClock, fresh_node

from idfields import Assignment, Layout, NodeError, StaticNode
from idfields.errors import GeneratorClosed
from idfields.generators import IdGenerator, TimeGenerator
from idfields.layouts import SNOWFLAKE

pytestmark = pytest.mark.core


@pytest.mark.parametrize("core", CORES)
def test_a_closed_generator_raises_naming_what_to_call_instead(core: type[TimeGenerator]) -> None:
    clock = FakeClock(START_NS + 20_000 * MS)  # a frozen clock: every ID in one millisecond
    node = StaticNode(fresh_node())
    old = core("snowflake", node, clock=clock, sleep=clock.sleep)
    first = old.take(10)
    old.close()
    new = core("snowflake", node, clock=clock, sleep=clock.sleep)
    issued = new.take(1000)
    for attempt in (lambda: [old()], lambda: old.take(1000)):
        with pytest.raises(GeneratorClosed, match=r"closed.*make_generator"):
            issued += attempt()
    assert min(issued) > max(first)
    old.close()  # closing twice is harmless


class SlowRelease:
    """A lease-like source whose release takes a database round trip (50 ms), during which the
    GIL is free; it records the fence each release wrote."""

    def __init__(self) -> None:
        self.nodes = iter(range(1, 1024))  # unfenced: the node numbers are free
        self.fences: list[int] = []

    def acquire(self, layout: Layout) -> Assignment:
        return Assignment({"node": next(self.nodes)}, release=self.release)

    def release(self, issued_until_ns: int) -> None:
        time.sleep(0.05)  # the round trip (not synchronisation)
        self.fences.append(issued_until_ns)


@pytest.mark.parametrize("core", CORES)
def test_nothing_is_issued_past_the_fence_close_wrote(core: type[TimeGenerator]) -> None:
    source = SlowRelease()
    generator = core("snowflake", source)
    ids: list[int] = []
    started = threading.Event()
    stop = threading.Event()
    outcome: list[BaseException] = []

    def issue() -> None:
        try:
            while not stop.is_set():
                ids.append(generator())
                if len(ids) == 1000:
                    started.set()
        except NodeError as error:
            outcome.append(error)
        finally:
            started.set()

    thread = threading.Thread(target=issue)
    thread.start()
    started.wait()
    generator.close()
    stop.set()
    thread.join()
    first_node = SNOWFLAKE.decode(ids[0]).values["node"]
    fence = source.fences[0]
    late = [v for v in ids if SNOWFLAKE.decode(v).values["node"] == first_node]
    late = [v for v in late if SNOWFLAKE.decode(v).time_ns > fence]  # type: ignore[operator]
    assert len(late) == 0, f"{len(late):,} IDs stamped past the fence"
    assert outcome and isinstance(outcome[0], GeneratorClosed)
    assert len(set(ids)) == len(ids)


class CallsDuringRelease:
    """A source whose release (the database round trip) lets another thread call the generator:
    once close() has begun, that call must wait for the lock, and then be refused."""

    def __init__(self) -> None:
        self.generator: IdGenerator | None = None
        self.issued: list[int] = []
        self.refused: list[BaseException] = []
        self.caller: threading.Thread | None = None

    def acquire(self, layout: Layout) -> Assignment:
        return Assignment({field.name: 1 for field in layout.node_fields}, release=self.release)

    def release(self, issued_until_ns: int) -> None:
        def call() -> None:
            assert self.generator is not None
            try:
                self.issued.append(self.generator())
            except NodeError as error:
                self.refused.append(error)

        self.caller = threading.Thread(target=call)
        self.caller.start()
        self.caller.join(timeout=0.2)  # a correct call blocks on the lock; this proves it does


def _fresh(core: type[IdGenerator], source: CallsDuringRelease) -> IdGenerator:
    """A generator whose first ID leaves the hot path plenty to hand out: 4,095 IDs of a tick
    on a frozen clock, or 922 million of a DecimalId block."""
    if issubclass(core, TimeGenerator):
        clock = FakeClock()
        return core("snowflake", source, clock=clock, sleep=clock.sleep)
    return core("decimal", source)


@pytest.mark.parametrize("core", CORES + COUNTER_CORES)
def test_no_hot_path_issues_once_close_has_begun(core: type[IdGenerator]) -> None:
    source = CallsDuringRelease()
    generator = source.generator = _fresh(core, source)
    generator()
    generator.close()
    assert source.caller is not None
    source.caller.join()
    assert source.issued == []
    assert isinstance(source.refused[0], GeneratorClosed)
