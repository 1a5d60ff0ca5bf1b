"""Crash loops never exhaust the node space: workers SIGKILLed faster than the lease ttl lets
their nodes lapse keep finding nodes, with zero duplicates (the full-scale figure is
``python -m benchmarks.crash_loop``)."""

from __future__ import annotations

import pytest
from dbapi_database import DbApiDatabase
from test_coordination_leases import lease_layout

from benchmarks.crash_loop import run


@pytest.mark.slow
def test_a_crash_loop_keeps_finding_nodes_with_no_duplicate(db: DbApiDatabase, unique: str) -> None:
    layout = lease_layout(f"crash_{unique}", node_bits=3)  # 8 nodes, 60 s ttl, 40 restarts
    result = run(lambda: db, layout, restarts=40, rate=40, workers=2, ttl_s=60)
    assert result.no_node == 0, f"{result.no_node} of 40 restarts found no free node"
    assert result.ids >= 40 * 256  # every worker issued before it was killed
    assert result.duplicates == 0
