"""Crash loops never exhaust the node space and never take a live lease: workers SIGKILLed
(and reaped) at a rate the node space absorbs with short leases keep finding nodes, with zero
duplicates (the full-scale figure is ``python -m benchmarks.crash_loop``)."""

from __future__ import annotations

import pytest
from dbapi_database import DbApiDatabase
from test_coordination_leases import lease_layout

from benchmarks.crash_loop import run


@pytest.mark.slow
def test_a_crash_loop_keeps_finding_nodes_with_no_duplicate(db: DbApiDatabase, unique: str) -> None:
    # 16 nodes, 40 restarts in 4 s: more than the nodes, so dead workers' nodes come back
    # (1.5 s leases: a proven-dead worker's node within half a second of its claim).
    layout = lease_layout(f"crash_{unique}", node_bits=4)
    result = run(lambda: db, layout, restarts=40, rate=10, workers=2, ttl_s=1.5)
    assert result.no_node == 0, f"{result.no_node} of 40 restarts found no free node"
    assert result.ids >= 40 * 256  # every worker issued before it was killed
    assert (result.duplicates, result.live_taken) == (0, 0)
