"""Helpers of the other-generator tests: throwaway Redis servers, a DB-API adapter of the
coordination protocol over psycopg, and forked worker processes."""

from __future__ import annotations

import multiprocessing
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

FORK = multiprocessing.get_context("fork")
REDIS_SERVER = shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class RedisServer:
    """One ``redis-server`` on a loopback port, no persistence; never the machine's 6379."""

    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2)

    def start(self) -> RedisServer:
        if REDIS_SERVER is None:
            raise RuntimeError("redis-server is not on PATH")
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                str(self.folder),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client().ping()
                return self
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server on port {self.port} did not start") from None
                time.sleep(0.02)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def run_processes(count: int, target: Callable[..., Any], *args: Any) -> list[Any]:
    """Run ``target(index, *args)`` in ``count`` forked processes at once; their results."""
    results = FORK.SimpleQueue()
    processes = [
        FORK.Process(target=_child, args=(results, target, index, args)) for index in range(count)
    ]
    for process in processes:
        process.start()
    collected = [results.get() for _ in processes]
    for process in processes:
        process.join(60)
    failed = [value for ok, value in collected if not ok]
    if failed:
        raise AssertionError(f"{len(failed)} of {count} children failed, first: {failed[0]}")
    return [value for _, value in collected]


def _child(results: Any, target: Callable[..., Any], index: int, args: tuple[Any, ...]) -> None:
    try:
        results.put((True, target(index, *args)))
    except BaseException as error:  # report, so the parent never waits forever
        results.put((False, repr(error)))
