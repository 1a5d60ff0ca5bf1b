"""Node leases on PostgreSQL, MariaDB and SQLite: distinct nodes for live processes, fenced reuse,
no exhaustion under restart churn."""

from __future__ import annotations

import os
import signal
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from coordination_procs import CONTEXT, gate_of, run_together
from dbapi_database import DbApiDatabase
from generator_support import MS, FakeClock

from idfields import Layout, Node, NodeError, Sequence, Timestamp, make_generator
from idfields.coordination import LeaseSource, list_leases
from idfields.layouts import SNOWFLAKE_EPOCH


def lease_layout(name: str, node_bits: int = 10, maximum: int | None = None) -> Layout:
    """A snowflake-shaped layout of its own name, so each test has its own rows."""
    return Layout(
        name,
        [
            Timestamp(41, unit="ms", epoch=SNOWFLAKE_EPOCH),
            Node(node_bits, maximum=maximum),
            Sequence(12),
        ],
    )


def test_claims_renews_and_releases(db: DbApiDatabase, unique: str) -> None:
    layout = lease_layout(f"basic_{unique}")
    assignment = LeaseSource(db, ttl_s=30, holder="tester").acquire(layout)
    node = assignment.values["node"]
    now = time.time_ns()
    assert assignment.not_before_ns == 0  # a never-used node needs no fence
    assert assignment.valid_until_ns is not None and assignment.renew_after_ns is not None
    assert now < assignment.valid_until_ns <= now + 30 * 10**9 + 10**6
    assert assignment.renew_after_ns < assignment.valid_until_ns
    [row] = list_leases(db, layout.name)
    assert (row.node, row.live) == (node, True)
    assert row.holder.startswith("tester:")

    assert assignment.renew is not None and assignment.release is not None
    renew_after, valid_until = assignment.renew()
    assert valid_until >= assignment.valid_until_ns and renew_after < valid_until

    assignment.release(time.time_ns())
    [row] = list_leases(db, layout.name)
    assert (row.holder, row.live) == ("", False)


def test_a_released_node_is_fenced_after_what_its_holder_issued(
    db: DbApiDatabase, unique: str
) -> None:
    layout = lease_layout(f"released_{unique}", node_bits=1, maximum=0)  # a single node
    first = LeaseSource(db).acquire(layout)
    issued_until = time.time_ns() + 5 * 10**6  # it ran 5 ms ahead of the clock
    assert first.release is not None
    first.release(issued_until)
    after = FakeClock(issued_until + 2 * MS)  # the release holds the node to issued_until
    second = LeaseSource(db, clock=after).acquire(layout)
    assert issued_until <= second.not_before_ns < issued_until + 10**6


def test_reuse_is_fenced_after_the_old_expiry(db: DbApiDatabase, unique: str) -> None:
    layout = lease_layout(f"fence_{unique}", node_bits=1, maximum=0)  # a single node
    first = LeaseSource(db, ttl_s=0.05).acquire(layout)
    with pytest.raises(
        NodeError, match=rf"no free node for layout 'fence_{unique}'.* of its 1 nodes"
    ):
        LeaseSource(db).acquire(layout)
    later = FakeClock(time.time_ns() + 80 * MS)  # past the first lease's 50 ms
    second = LeaseSource(db, clock=later).acquire(layout)
    assert second.values == first.values
    assert second.not_before_ns == first.valid_until_ns
    assert first.renew is not None
    with pytest.raises(NodeError, match="lease lost"):
        first.renew()
    assert first.release is not None
    first.release(time.time_ns())  # the loser's release must not free the winner's lease
    [row] = list_leases(db, layout.name)
    assert row.live


def test_refuses_layouts_a_lease_cannot_serve(db: DbApiDatabase) -> None:
    with pytest.raises(NodeError, match="no timestamp"):
        LeaseSource(db).acquire(Layout("counted", [Sequence(9), Node(5)], base=10))
    two_nodes = Layout("two", [Timestamp(41, epoch=SNOWFLAKE_EPOCH), Node(5), Node(5, name="dc")])
    with pytest.raises(NodeError, match="exactly one Node field"):
        LeaseSource(db).acquire(two_nodes)
    with pytest.raises(ValueError, match="ttl_s"):
        LeaseSource(db, ttl_s=0)


def _claim_and_hold(index: int, db: DbApiDatabase, layout: Layout, gate: Any) -> int:
    with gate:  # bounds open connections (max_connections), not the racing of the claims
        node = LeaseSource(db).acquire(layout).values["node"]
        db.close()
    return node


@pytest.mark.slow
@pytest.mark.parametrize("processes", [8, 200])
def test_processes_starting_at_once_get_distinct_nodes(
    db: DbApiDatabase, unique: str, processes: int
) -> None:
    layout = lease_layout(f"crowd{processes}_{unique}")
    gate = gate_of(16)  # 16 claims racing at any time; a few workers fit in max_connections=100
    nodes = run_together(processes, _claim_and_hold, db, layout, gate)
    assert len(set(nodes)) == processes
    assert {row.node for row in list_leases(db, layout.name) if row.live} == set(nodes)


@pytest.mark.slow
def test_restart_churn_never_exhausts_the_node_space(db: DbApiDatabase, unique: str) -> None:
    """1,250 short lives on 2 nodes, about 625 on each: a clean exit frees its node, and the
    fence it leaves (what it issued) never creeps ahead of the clock, or the space runs out."""
    layout = lease_layout(f"churn_{unique}", node_bits=1)
    seen: set[int] = set()
    issued: list[int] = []
    for _ in range(1_250):
        generator = make_generator(layout, LeaseSource(db))
        issued.append(generator())
        seen.add(generator.node["node"])  # type: ignore[index]
        generator.close()
    assert seen == {0, 1}  # random candidates, not everyone on node 0
    assert len(set(issued)) == len(issued)  # each life starts after the last one's IDs
    assert not any(row.live for row in list_leases(db, layout.name))


def _issue_until_killed(path: str, db: DbApiDatabase, layout: Layout) -> None:
    generator = make_generator(layout, LeaseSource(db, ttl_s=1))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    while True:  # every ID issued is on disk before the next batch is asked for
        ids = generator.take(64)
        os.write(fd, struct.pack(f"<{len(ids)}q", *ids))
        time.sleep(0.0005)


@pytest.mark.slow
def test_sigkilled_holder_is_reclaimed_at_once_behind_its_fence(
    db: DbApiDatabase, unique: str, tmp_path: Path
) -> None:
    layout = lease_layout(f"killed_{unique}", node_bits=1, maximum=0)  # one node to fight over
    path = tmp_path / "issued.bin"
    path.touch()
    process = CONTEXT.Process(target=_issue_until_killed, args=(str(path), db, layout))
    process.start()
    time.sleep(1.5)  # long enough to renew its 1 s lease a few times
    assert process.pid is not None
    os.kill(process.pid, signal.SIGKILL)
    process.join()
    data = path.read_bytes()
    killed = struct.unpack(f"<{len(data) // 8}q", data[: len(data) // 8 * 8])
    assert len(killed) > 1000
    # A process whose clock is 3 s behind cannot prove the dead holder's IDs are in its past:
    # it leaves the lease alone until it lapses.
    behind = lambda: time.time_ns() - 3 * 10**9  # noqa: E731
    with pytest.raises(NodeError, match="no free node"):
        LeaseSource(db, clock=behind).acquire(layout)
    # On this host's own clock the holder is provably dead: its node is reclaimed at once,
    # fenced after everything the dead process could have issued.
    newcomer = make_generator(layout, LeaseSource(db))
    fresh = newcomer.take(20_000)
    assert newcomer.node == {"node": 0}
    last_killed = layout.decode(max(killed)).time_ns
    assert last_killed is not None
    assert layout.decode(fresh[0]).time_ns > last_killed  # type: ignore[operator]
    assert min(fresh) > max(killed) and not set(fresh) & set(killed)
    newcomer.close()


def test_a_lost_lease_moves_the_generator_to_another_node(db: DbApiDatabase, unique: str) -> None:
    layout = lease_layout(f"lost_{unique}", node_bits=1)  # nodes 0 and 1
    clock = FakeClock(time.time_ns())
    generator = make_generator(
        layout, LeaseSource(db, ttl_s=0.3, clock=clock), clock=clock, sleep=clock.sleep
    )
    before = generator()
    lost = generator.node["node"]  # type: ignore[index]
    other = LeaseSource(db, ttl_s=60).acquire(layout)  # a neighbour holds the other node
    # A process whose clock is 5 s ahead sees our lease lapsed and takes the node.
    thief = LeaseSource(db, ttl_s=60, clock=lambda: time.time_ns() + 5 * 10**9).acquire(layout)
    assert thief.values == {"node": lost}
    assert other.release is not None
    other.release(time.time_ns())  # the neighbour exits: its node is free again
    clock.sleep(0.15)  # past renew_after (ttl / 3): the next ID renews, finds the lease lost
    after = generator.take(10)
    assert generator.node == {"node": 1 - lost}
    assert before < after[0] and len(set(after)) == 10
    holders = {row.node: row.live for row in list_leases(db, layout.name)}
    assert holders == {0: True, 1: True}
    generator.close()
