"""What an idle worker's ``expired`` lease means. A generator renews its lease inside the ID calls
(or on a thread, under ``BackgroundRenewal``): a worker that issues nothing for longer than the
ttl shows ``expired`` in ``nodes``. Nothing is wrong: it issued nothing after the expiry, so
the node is free to take, fenced after it. Its next ID renews the same node when nobody took it
meanwhile, or takes another node (a claim inside that call) when someone did; with no node
free, that call raises and the next one tries again."""

from __future__ import annotations

import time

import pytest
from dbapi_database import DbApiDatabase
from generator_support import FakeClock
from test_coordination_leases import lease_layout

from idfields import NodeError, make_generator
from idfields.coordination import LeaseSource, list_leases

S = 1_000_000_000


def state(db: DbApiDatabase, layout: str, node: int, now_ns: int) -> tuple[bool, str]:
    (lease,) = [x for x in list_leases(db, layout, now_ns=now_ns) if x.node == node]
    return lease.live, lease.holder


def test_an_idle_worker_renews_its_expired_lease_at_its_next_id(
    db: DbApiDatabase, unique: str
) -> None:
    layout = lease_layout(f"idle_{unique}")
    clock = FakeClock(time.time_ns())
    generator = make_generator(layout, LeaseSource(db, ttl_s=1, clock=clock), clock=clock)
    first = generator()
    node = generator.node["node"]  # type: ignore[index]
    clock.now_ns += 5 * S  # idle for five ttls
    live, holder = state(db, layout.name, node, clock.now_ns)
    assert not live and holder, "idle: expired, still naming its holder"
    assert generator() > first and generator.node == {"node": node}
    assert state(db, layout.name, node, clock.now_ns)[0], "live again"
    generator.close()


def test_an_idle_workers_node_taken_meanwhile_is_never_shared(
    db: DbApiDatabase, unique: str
) -> None:
    layout = lease_layout(f"idle_taken_{unique}", node_bits=1)  # nodes 0 and 1
    clock = FakeClock(time.time_ns())
    idle = make_generator(layout, LeaseSource(db, ttl_s=1, clock=clock), clock=clock)
    idle()
    node = idle.node["node"]  # type: ignore[index]
    other = LeaseSource(db, ttl_s=60, clock=clock).acquire(layout)  # the other node
    clock.now_ns += 5 * S
    taker = make_generator(layout, LeaseSource(db, ttl_s=60, clock=clock), clock=clock)
    taken = [taker() for _ in range(3)]
    assert taker.node == {"node": node}, "the expired node is free to take"
    with pytest.raises(NodeError, match="no free node"):
        idle()  # its renewal finds another holder; no node is free: it says so
    assert other.release is not None
    other.release(clock.now_ns)
    clock.now_ns += 2_000_000  # past the released lease's end (a whole ms, rounded up)
    resumed = [idle() for _ in range(3)]
    assert idle.node != {"node": node}
    assert not set(resumed) & set(taken)
    taker.close()
    idle.close()
