"""A signal handler raising inside a node claim, after the source granted the lease and before
its fence is in place (Python checks for signals at every call): the generator stays stale and
claims again, and gives the lease it never used back no lower than its fence, which is what the
node's previous holder issued up to. Released at the clock's time instead, the fence of the
node's next holder fell below the IDs the previous one ran ahead to: 4,000 of 4,000 again."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from sqlalchemy import create_engine

from idfields import Layout, make_generator
from idfields.coordination import LeaseSource
from idfields.layouts import Node, Sequence, Timestamp
from idfields.layouts._builtin import SNOWFLAKE_EPOCH
from idfields.sqlalchemy_ext import SQLAlchemyDatabase, metadata

pytestmark = pytest.mark.core

# One node and four IDs a millisecond: running 2 s ahead takes 8,000 IDs.
ONE_NODE = Layout(
    "onenode", [Timestamp(41, unit="ms", epoch=SNOWFLAKE_EPOCH), Node(1, minimum=1), Sequence(2)]
)
AHEAD_NS = 3_000_000_000


@pytest.mark.parametrize("interrupted_call", ["arm", "_accept", "tick_of"])
def test_an_interrupted_claim_gives_its_lease_back_no_lower_than_its_fence(
    tmp_path: Path, interrupted_call: str
) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'leases.db'}")
    metadata.create_all(engine)
    step = [0]  # the second host's clock: 3 s fast when it claims, then stepped back to true

    def source() -> LeaseSource:
        clock = lambda: time.time_ns() + step[0]  # noqa: E731
        return LeaseSource(SQLAlchemyDatabase(engine), ttl_s=60, clock=clock)

    first = make_generator(ONE_NODE, source(), max_skew_ns=AHEAD_NS)
    first_ids = first.take(8000)  # 2 s ahead of the clock; the node's fence is its end
    first.close()
    step[0] = AHEAD_NS
    second = make_generator(ONE_NODE, source(), max_skew_ns=AHEAD_NS)
    interrupted: list[str] = []

    def interrupt_once(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_name == interrupted_call and not interrupted:
            interrupted.append(frame.f_code.co_filename)
            raise KeyboardInterrupt  # what a raising signal handler does at that call

    sys.settrace(interrupt_once)
    try:
        with pytest.raises(KeyboardInterrupt):
            second()
    finally:
        sys.settrace(None)
    assert interrupted, f"{interrupted_call} was never called in a claim"
    step[0] = 0  # NTP steps the second host's clock back
    second_ids: list[int] = []
    try:
        second_ids += (second() for _ in range(4000))
    except Exception:
        pass
    finally:
        second.close()
    twice = set(first_ids) & set(second_ids)
    assert not twice, f"{len(twice)} of the second holder's {len(second_ids)} IDs were issued twice"
