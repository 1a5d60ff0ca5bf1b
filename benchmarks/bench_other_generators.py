"""IDs per second of the other generators against the in-process one (issue 7).

- Redis: one ``client()`` per ID (a network round trip each) and ``client.take(1000)`` (one
  round trip per batch), against a ``redis-server`` this module starts on a free loopback port.
- Host-shared: 8 forked processes calling ``gen()`` on one state file (lock + mmap per ID), and
  one process alone.
- The in-process ``snowflake`` generator, the baseline of every ratio.

No targets: these trade speed for fewer nodes (Redis: none per process; host-shared: one per
host), and the ratios say what that costs. ``python -m benchmarks.bench_other_generators``.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from benchmarks.report import run_alone
from benchmarks.rows import Row
from benchmarks.timing import ns_per_call
from idfields import StaticNode, make_generator
from idfields.hostshared import HostSharedGenerator

GROUP = "other generators: IDs/s"
IN_PROCESS = "in-process generator: gen()"
PROCESSES = 8


def _row(name: str, value: float | None, note: str = "") -> Row:
    row: Row = {
        "group": GROUP,
        "name": name,
        "value": value,
        "unit": "ids/s",
        "baseline": None if name == IN_PROCESS else IN_PROCESS,
        "target": None,
        "higher_is_better": True,
    }
    if note:
        row["note"] = note
    return row


def _rate(count: int, seconds: float) -> float:
    return count / seconds


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


def redis_rows(quick: bool) -> list[Row]:
    singles, batches = (2_000, 50) if quick else (20_000, 500)
    with redis_server() as url:
        if url is None:
            note = "redis-server is not on PATH"
            return [_row("redis: client()", None, note), _row("redis: take(1000)", None, note)]
        import redis

        from idfields.redisid import RedisIdClient, configure_shard

        deadline = time.monotonic() + 10
        while True:
            try:
                configure_shard(redis.Redis.from_url(url), 1)
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        client = RedisIdClient([url])
        client()  # load the script before timing
        start = time.perf_counter()
        for _ in range(singles):
            client()
        single = _rate(singles, time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(batches):
            client.take(1000)
        batch = _rate(batches * 1000, time.perf_counter() - start)
        client.close()
    note = "one loopback round trip per call"
    return [_row("redis: client()", single, note), _row("redis: take(1000)", batch)]


def _shared_worker(path: str, count: int, barrier: Any, times: Any) -> None:
    generator = HostSharedGenerator("snowflake", node=1, path=path)
    generator()
    barrier.wait()
    start = time.perf_counter()
    for _ in range(count):
        generator()
    times.put((start, time.perf_counter()))


def host_shared_rows(quick: bool) -> list[Row]:
    per_process = 20_000 if quick else 100_000
    context = get_context("fork")
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "state")
        alone = HostSharedGenerator("snowflake", node=1, path=path)
        alone()
        start = time.perf_counter()
        for _ in range(per_process):
            alone()
        single = _rate(per_process, time.perf_counter() - start)
        barrier = context.Barrier(PROCESSES)
        times = context.SimpleQueue()
        workers = [
            context.Process(target=_shared_worker, args=(path, per_process, barrier, times))
            for _ in range(PROCESSES)
        ]
        for worker in workers:
            worker.start()
        spans = [times.get() for _ in workers]
        for worker in workers:
            worker.join()
    wall = max(end for _, end in spans) - min(start for start, _ in spans)
    shared = _rate(per_process * PROCESSES, wall)
    return [
        _row("host-shared: gen(), 1 process", single),
        _row(f"host-shared: gen(), {PROCESSES} processes", shared, "all processes together"),
    ]


def run(quick: bool = False) -> list[Row]:
    generator = make_generator("snowflake", StaticNode(1))
    generator()
    min_seconds, repeats = (0.02, 3) if quick else (0.1, 5)
    in_process = 1e9 / ns_per_call(generator, min_seconds=min_seconds, repeats=repeats)
    return [_row(IN_PROCESS, in_process), *redis_rows(quick), *host_shared_rows(quick)]


if __name__ == "__main__":
    run_alone(run)
