"""SIGTERM, as Kubernetes, systemd and ``docker stop`` send it, gives the node back before the
process dies, whatever the process does with the signal (real processes, each backend)."""

from __future__ import annotations

import signal
from datetime import UTC, datetime

import pytest
from service_support import ROOT, live_leases, start

LEASE_PROCESS = ROOT / "benchmarks" / "lease_process.py"


@pytest.mark.parametrize(
    ("mode", "exit_status"),
    [("plain", -signal.SIGTERM), ("graceful", 0), ("reraise", -signal.SIGTERM)],
)
def test_sigterm_leaves_no_live_lease(sa_url: str, mode: str, exit_status: int) -> None:
    process = start([str(LEASE_PROCESS), sa_url, mode])
    assert live_leases(sa_url, pid=process.pid), "the process holds a lease while it runs"
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=30)
    assert process.returncode == exit_status, output  # the signal's own outcome, kept
    now = datetime.now(UTC)
    left = [
        f"node {lease.node}: {(lease.expires_at - now).total_seconds():.0f} s of ttl left"
        for lease in live_leases(sa_url, pid=process.pid)
    ]
    assert not left, f"live after SIGTERM: {left}"
