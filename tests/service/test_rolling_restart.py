"""A rolling restart stopped by SIGTERM needs one node more than the fleet, not twice the
fleet (``python -m benchmarks.rolling_restart`` reports both, at any scale)."""

from __future__ import annotations

import signal

import pytest

from benchmarks.rolling_restart import peak_leases


@pytest.mark.slow
def test_a_rolling_restart_needs_one_node_more_than_the_fleet(sa_url: str) -> None:
    assert peak_leases(sa_url, 4, signal.SIGTERM) == 5
