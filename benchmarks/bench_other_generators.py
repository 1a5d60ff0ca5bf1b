"""IDs per second of the other generators against the in-process one.

- Redis: one ``client()`` per ID (a network round trip each) and ``client.take(1000)`` (one
  round trip per batch), against a ``redis-server`` this module starts on a free loopback port.
- Host-shared: 8 forked processes calling ``gen()`` on one state file (lock + mmap per ID), and
  one process alone.
- The in-process ``snowflake`` generator, the baseline of every ratio.

All in paired rounds (:mod:`benchmarks.timing`). No targets: these trade speed for fewer nodes
(Redis: none per process; host-shared: one per host), and the ratios say what that costs.
``python -m benchmarks.bench_other_generators [--quick]``.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from benchmarks.processes import gather
from benchmarks.report import run_alone
from benchmarks.rows import Row, make_row
from benchmarks.timing import Paired, paired, paired_rows, seconds
from idfields import StaticNode, make_generator
from idfields.hostshared import HostSharedGenerator

GROUP = "other generators: IDs/s"
IN_PROCESS = "in-process generator: gen()"
PROCESSES = 8


@contextmanager
def redis_server() -> Iterator[str | None]:
    """A throwaway ``redis-server`` (no persistence) on a free port; None when not installed."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as folder:
        options = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", folder]
        server = subprocess.Popen(
            [binary, "--port", str(port), *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            server.kill()
            server.wait()


def _connect(url: str) -> None:
    import redis

    from idfields.redisid import configure_shard

    deadline = time.monotonic() + 10
    while True:
        try:
            configure_shard(redis.Redis.from_url(url), 1)
            return
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _rate(make: Callable[[], object], count: int, per_call: int = 1) -> float:
    return count * per_call / seconds(lambda: [make() for _ in range(count)])


def _shared_worker(path: str, count: int, barrier: Any, times: Any) -> None:
    generator = HostSharedGenerator("snowflake", node=1, path=path)
    generator()
    barrier.wait()
    start = time.perf_counter()
    for _ in range(count):
        generator()
    times.put((start, time.perf_counter()))


def _host_shared(folder: str, per_process: int, processes: int) -> float:
    """IDs/s of ``processes`` forked processes sharing one state file."""
    path = str(Path(folder) / "state")
    if processes == 1:
        alone = HostSharedGenerator("snowflake", node=1, path=path)
        alone()
        return _rate(alone, per_process)
    context = get_context("fork")
    barrier = context.Barrier(processes)
    spans: list[tuple[float, float]] = gather(
        context, _shared_worker, (path, per_process, barrier), processes
    )
    wall = max(end for _, end in spans) - min(start for start, _ in spans)
    return per_process * processes / wall


def run(quick: bool = False) -> list[Row]:
    singles, batches, per_process, rounds = (
        (500, 10, 5_000, 2) if quick else (5_000, 100, 50_000, 5)
    )
    generator = make_generator("snowflake", StaticNode(1))
    generator()
    with redis_server() as url, tempfile.TemporaryDirectory() as folder:
        subjects: dict[str, Callable[[], float]] = {
            IN_PROCESS: lambda: _rate(generator, per_process),
            "host-shared: gen(), 1 process": lambda: _host_shared(folder, per_process, 1),
            f"host-shared: gen(), {PROCESSES} processes": lambda: _host_shared(
                folder, per_process, PROCESSES
            ),
        }
        missing: list[Row] = []
        if url is None:
            note = "redis-server is not on PATH"
            missing = [make_row(GROUP, name, None, "ids/s", IN_PROCESS, note=note)
                       for name in ("redis: client()", "redis: take(1000)")]  # fmt: skip
        else:
            from idfields.redisid import RedisIdClient

            _connect(url)
            client = RedisIdClient([url])
            client()  # load the script before timing
            subjects["redis: client()"] = lambda: _rate(client, singles)
            subjects["redis: take(1000)"] = lambda: _rate(lambda: client.take(1000), batches, 1000)
        result: Paired[str] = paired(list(subjects), rounds, lambda name: subjects[name]())
        if url is not None:
            client.close()
    notes = {
        "redis: client()": "one loopback round trip per call",
        f"host-shared: gen(), {PROCESSES} processes": "all processes together",
    }
    rows = paired_rows(GROUP, "ids/s", result, IN_PROCESS, notes=notes, higher_is_better=True)
    return rows + missing


if __name__ == "__main__":
    run_alone(run)
