"""Of any number of processes racing for one node, exactly one wins it, however their reads and
writes interleave and whatever lease ttl each deploy runs with: the claim's compare-and-set
matches the row's claim token (invariant L2 of docs/explanation/lease-protocol.md), never a time
a later claim can write again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress

import pytest
from coordination_procs import CONTEXT
from dbapi_database import DbApiDatabase
from stalling import Stalling
from test_coordination_leases import lease_layout

from idfields import Layout, NodeError
from idfields.coordination import LeaseSource
from idfields.nodes import Assignment

MS = 1_000_000


def _die_holding(index: int, db: DbApiDatabase, layout: Layout, ttl_s: float) -> None:
    LeaseSource(db, ttl_s=ttl_s).acquire(layout)


def _dead_holders_expiry(db: DbApiDatabase, layout: Layout, ttl_s: float) -> int:
    """A process that leased the layout's one node and died (reaped: provably dead here)."""
    process = CONTEXT.Process(target=_die_holding, args=(0, db, layout, ttl_s))
    process.start()
    process.join()
    assert process.exitcode == 0
    [(expires,)] = db.execute(
        "SELECT expires_at_ms FROM idfields_node_lease WHERE layout = %s", [layout.lease_key]
    ).rows
    return int(expires)


def _race(db: DbApiDatabase, layout: Layout, racers: int, ttl_s: float, now_ms: int) -> int:
    """``racers`` claimers on one clock, each read of the rows followed by the next racer's
    whole claim before its own write; returns how many of them won the node."""
    won: list[Assignment] = []

    def claim(index: int) -> None:
        if index == racers:
            return
        stalled = Stalling(db)
        stalled.stall = lambda: claim(index + 1)
        source = LeaseSource(stalled, ttl_s=ttl_s, clock=lambda: now_ms * MS)
        with suppress(NodeError):
            won.append(source.acquire(layout))

    claim(0)
    return len(won)


@pytest.fixture
def one_node(unique: str) -> Iterator[Layout]:
    yield lease_layout(f"aba_{unique}", node_bits=1, maximum=0)


@pytest.mark.parametrize("holder_ttl_s", [1.0, 2.0], ids=["same ttl", "holder ttl 2 s"])
def test_racers_reclaiming_a_dead_holders_node_never_both_win(
    db: DbApiDatabase, one_node: Layout, holder_ttl_s: float
) -> None:
    """At the first millisecond a reclaim is allowed, a claimer with a 1 s ttl writes back the
    very expiry it read: a compare-and-set on the expiry lets every stalled racer win too."""
    expires = _dead_holders_expiry(db, one_node, holder_ttl_s)
    assert _race(db, one_node, racers=4, ttl_s=1.0, now_ms=expires - 1000) == 1


def test_racers_for_a_lapsed_node_never_both_win(db: DbApiDatabase, one_node: Layout) -> None:
    expires = _dead_holders_expiry(db, one_node, 1.0)
    assert _race(db, one_node, racers=4, ttl_s=1.0, now_ms=expires + 1) == 1


def test_racers_for_a_new_node_never_both_win(db: DbApiDatabase, one_node: Layout) -> None:
    assert _race(db, one_node, racers=4, ttl_s=1.0, now_ms=1_900_000_000_000) == 1
