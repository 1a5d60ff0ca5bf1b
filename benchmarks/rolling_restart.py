"""The nodes a rolling restart needs at once.

``python -m benchmarks.rolling_restart URL [--processes 8]`` starts N processes that each lease
a node of a layout of their own (``benchmarks/lease_process.py``), then replaces them one at a
time as a rolling deploy does: the successor starts and leases, then the old process is
stopped. It reports the peak number of live leases, once with SIGTERM (what Kubernetes, systemd
and ``docker stop`` send: the node is given back) and once with SIGKILL (a lease left to lapse:
what every SIGTERM did while only ``atexit`` released). The suite checks the SIGTERM peak
(tests/service/test_rolling_restart.py).
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa

from idfields.coordination import list_leases
from idfields.sqlalchemy_ext import SQLAlchemyDatabase, metadata

HOLDER = Path(__file__).resolve().parent / "lease_process.py"
ROOT = HOLDER.parent.parent


def peak_leases(url: str, processes: int, stop: signal.Signals) -> int:
    """Live leases at the worst moment of a rolling restart of ``processes`` processes."""
    layout = f"rolling_{secrets.token_hex(4)}"
    engine = sa.create_engine(url)
    metadata.create_all(engine)
    database = SQLAlchemyDatabase(engine)
    try:
        running = [_start(url, layout) for _ in range(processes)]
        peak = 0
        for index in range(processes):
            successor = _start(url, layout)  # up before the old one goes, as a deploy does
            peak = max(peak, _live(database, layout))
            _stop(running[index], stop)
            running[index] = successor
        peak = max(peak, _live(database, layout))
        for process in running:
            _stop(process, signal.SIGTERM)
        return peak
    finally:
        database.dispose()
        engine.dispose()


def _start(url: str, layout: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, str(HOLDER), url, "plain", layout],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("node="):
        process.kill()
        raise RuntimeError(f"a lease holder failed to start: {line}{process.stdout.read()}")
    return process


def _stop(process: subprocess.Popen[str], stop: signal.Signals) -> None:
    process.send_signal(stop)
    process.communicate(timeout=30)


def _live(database: SQLAlchemyDatabase, layout: str) -> int:
    return sum(lease.live for lease in list_leases(database, layout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="sync SQLAlchemy URL of the database holding the tables")
    parser.add_argument("--processes", type=int, default=8)
    args = parser.parse_args()
    for stop in (signal.SIGTERM, signal.SIGKILL):
        peak = peak_leases(args.url, args.processes, stop)
        print(f"{args.processes} processes, stopped by {stop.name}: peak {peak} live leases")


if __name__ == "__main__":
    main()
