"""A crash-looping fleet on one database: workers that lease a node, issue IDs and are SIGKILLed.

``python -m benchmarks.crash_loop URL [--rate 100] [--seconds 600] [--workers 8] [--ttl 3]``
starts workers at up to ``rate`` per second, ``workers`` alive at once; the oldest is killed
(and reaped, as a supervisor would) once it has issued its first IDs. It reports the restarts
per second it sustained, the restarts that found no node, duplicate IDs across every worker's
output, and live leases taken: a worker that claimed a node while the worker holding it before
was still running. Each worker writes every ID it got to a file of its own before asking for
more, so a killed worker's IDs are all counted. A killed worker's node comes back when its
lease lapses, or a second before, once the worker is proven dead (see
docs/explanation/lease-protocol.md, "Crash loops"), so the ttl sets the restart rate a node
space absorbs. The suite runs it at reduced scale (tests/coordination/test_crash_loop.py).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine

from idfields import Layout, make_generator
from idfields.coordination import Database, LeaseSource
from idfields.errors import NodeError
from idfields.sqlalchemy_ext._coordination import SQLAlchemyDatabase
from idfields.sqlalchemy_ext._tables import metadata

NO_NODE_EXIT = 3
_FORK = multiprocessing.get_context("fork")


@dataclass(frozen=True)
class CrashLoopResult:
    restarts: int
    seconds: float
    no_node: int  # restarts that found no free node
    ids: int
    duplicates: int
    live_taken: int  # claims of a node whose previous worker was still running

    @property
    def restarts_per_s(self) -> float:
        return self.restarts / self.seconds


def _worker(connect: Callable[[], Database], layout: Layout | str, ttl_s: float, path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        generator = make_generator(layout, LeaseSource(connect(), ttl_s=ttl_s))
        asked = time.monotonic_ns()  # the claim is made after this, inside the first take()
        first = generator.take(256)
        Path(f"{path}.node").write_text(f"{generator.node['node']}:{asked}")  # type: ignore[index]
        os.write(fd, b"".join(i.to_bytes(8, "little") for i in first))
        while True:  # killed from outside; every ID is on disk before the next batch
            ids = generator.take(256)
            os.write(fd, b"".join(i.to_bytes(8, "little") for i in ids))
            time.sleep(0.005)  # a worker serving requests, not a loop burning the CPU
    except NodeError:
        os._exit(NO_NODE_EXIT)


def _bare_worker(
    connect: Callable[[], Database], layout: Layout | str, ttl_s: float, path: str
) -> None:
    """The same restart without idfields: connect, run one query, write a mark, wait to die.
    Its rate is this machine's floor (fork, connection, kill) for the loop above."""
    connect().execute("SELECT 1")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(fd, os.getpid().to_bytes(8, "little"))
    while True:
        time.sleep(0.005)


def _kill_once_issuing(process: multiprocessing.process.BaseProcess, path: Path) -> int:
    """SIGKILL a worker once it holds a node and issued (so every kill leaves a dead holder
    behind), or once it gave up, and reap it; a slow start lowers the rate sustained, which is
    reported. Returns when it was dead (``time.monotonic_ns``)."""
    deadline = time.monotonic() + 10
    while process.exitcode is None and time.monotonic() < deadline:
        if path.exists() and path.stat().st_size:
            break
        time.sleep(0.002)
    if process.pid is not None and process.exitcode is None:
        os.kill(process.pid, signal.SIGKILL)
    process.join()
    return time.monotonic_ns()


def _live_taken(folder: Path, deaths: dict[str, int]) -> int:
    """Claims of a node made while the worker that held it before was still running."""
    claims: dict[int, list[tuple[int, int]]] = {}
    for marker in folder.glob("*.ids.node"):
        node, at = (int(part) for part in marker.read_text().split(":"))
        claims.setdefault(node, []).append((at, deaths[marker.name.removesuffix(".node")]))
    taken = 0
    for spans in claims.values():
        last_death = 0  # of every earlier holder of the node
        for at, died in sorted(spans):
            taken += at < last_death
            last_death = max(last_death, died)
    return taken


def run(
    connect: Callable[[], Database],
    layout: Layout | str = "snowflake",
    *,
    restarts: int,
    rate: float,
    workers: int,
    ttl_s: float = 3.0,
    bare: bool = False,
) -> CrashLoopResult:
    """Start ``restarts`` workers at ``rate`` per second, ``workers`` alive at once; each
    worker (a fork of this process) calls ``connect`` for its coordination database. ``bare``
    workers only connect (the machine's floor; their marks are not IDs)."""
    worker = _bare_worker if bare else _worker
    with tempfile.TemporaryDirectory(prefix="idfields-crash-") as folder:
        live: list[tuple[multiprocessing.process.BaseProcess, Path]] = []
        ended: list[multiprocessing.process.BaseProcess] = []
        deaths: dict[str, int] = {}
        started = time.monotonic()
        for index in range(restarts):
            time.sleep(max(0.0, started + index / rate - time.monotonic()))
            if len(live) >= workers:
                victim, victim_path = live.pop(0)
                deaths[victim_path.name] = _kill_once_issuing(victim, victim_path)
                ended.append(victim)
            path = Path(folder) / f"{index}.ids"
            process = _FORK.Process(target=worker, args=(connect, layout, ttl_s, str(path)))
            process.start()
            live.append((process, path))
        for process, path in live:
            deaths[path.name] = _kill_once_issuing(process, path)
            ended.append(process)
        seconds = time.monotonic() - started
        no_node = sum(1 for p in ended if p.exitcode == NO_NODE_EXIT)
        live_taken = _live_taken(Path(folder), deaths)
        seen: set[int] = set()
        total = 0
        for path in Path(folder).glob("*.ids"):
            data = path.read_bytes()
            ids = [int.from_bytes(data[i : i + 8], "little") for i in range(0, len(data) - 7, 8)]
            total += len(ids)
            seen.update(ids)
    return CrashLoopResult(restarts, seconds, no_node, total, total - len(seen), live_taken)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="SQLAlchemy URL of the database holding the idfields tables")
    parser.add_argument("--rate", type=float, default=100.0, help="restarts per second")
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--workers", type=int, default=8, help="workers alive at once")
    parser.add_argument("--ttl", type=float, default=3.0, help="lease ttl in seconds")
    args = parser.parse_args()
    metadata.create_all(create_engine(args.url))  # the idfields tables, if not there yet
    result = run(
        lambda: SQLAlchemyDatabase(create_engine(args.url)),
        restarts=round(args.rate * args.seconds),
        rate=args.rate,
        workers=args.workers,
        ttl_s=args.ttl,
    )
    print(
        f"{result.restarts:,} restarts in {result.seconds:.1f} s "
        f"({result.restarts_per_s:.1f}/s sustained), {result.no_node} found no node, "
        f"{result.ids:,} IDs, {result.duplicates} duplicates, "
        f"{result.live_taken} live leases taken"
    )


if __name__ == "__main__":
    main()
