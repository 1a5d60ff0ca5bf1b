"""A PostgreSQL 15 cluster of a test's own, run as the postgres OS user on a free port: what
the shared server cannot be made to do (crash, restore a disk snapshot, promote a standby).
Tests using it are skipped where PostgreSQL 15's initdb, setpriv or root is missing."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql as pgsql

from idfields import sql
from tests.pg.conftest import TABLES

PG_BIN = Path("/usr/lib/postgresql/15/bin")
AS_POSTGRES = ("setpriv", "--reuid=postgres", "--regid=postgres", "--clear-groups")


def postgres_user() -> bool:
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return False
    return True


available = pytest.mark.skipif(
    not ((PG_BIN / "initdb").exists() and shutil.which("setpriv") and os.geteuid() == 0)
    or not postgres_user(),
    reason="needs PostgreSQL 15 (initdb) and root to run a cluster as user postgres",
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


FAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


class Cluster:
    """initdb'd in ``root/name``, started with ``settings`` (``-c`` options); with ``faked``,
    on a clock of its own (libfaketime): the host's plus the offset :meth:`set_clock` writes."""

    def __init__(
        self,
        root: Path,
        name: str,
        settings: dict[str, str] | None = None,
        *,
        faked: bool = False,
    ) -> None:
        self.root = root
        self.data = root / name
        self.port = free_port()
        self.settings = settings or {}
        self.clock = root / f"{name}.clock" if faked else None
        if self.clock is not None:
            self.set_clock(0)

    def set_clock(self, offset_s: float) -> None:
        """The server's clock from its next read on: the host's plus ``offset_s``."""
        assert self.clock is not None, "a cluster on the host's clock"
        self.clock.write_text(f"{offset_s:+.3f}\n")
        os.chmod(self.clock, 0o644)

    def _env(self) -> dict[str, str]:
        env = {"PATH": "/usr/bin:/bin"}
        if self.clock is not None:  # a file the server rereads on every call
            env |= {
                "LD_PRELOAD": str(FAKETIME),
                "FAKETIME_TIMESTAMP_FILE": str(self.clock),
                "FAKETIME_NO_CACHE": "1",
                "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            }
        return env

    def init(self) -> Cluster:
        self.run(["initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust"])
        return self

    def run(self, args: list[str]) -> None:
        """A PostgreSQL program, as user postgres (preloaded past setpriv, which runs as root
        and may not open libfaketime's shared state)."""
        environment = [f"{key}={value}" for key, value in self._env().items()]
        subprocess.run(
            [*AS_POSTGRES, "env", *environment, str(PG_BIN / args[0]), *args[1:]],
            check=True,
            capture_output=True,
            cwd=self.root,
            env={"PATH": "/usr/bin:/bin"},
        )

    def start(self) -> None:
        options = " ".join(f"-c {key}={value}" for key, value in self.settings.items())
        self.run(
            [
                *("pg_ctl", "-D", str(self.data), "-w", "-l", f"{self.data}.log", "-o"),
                f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 {options}",
                "start",
            ]
        )

    def ready(self, dbname: str = "postgres", timeout_s: float = 60) -> None:
        """Wait until the server takes connections (crash recovery may outlast pg_ctl's wait
        on a faked clock)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with self.connect(dbname):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self, mode: str = "fast") -> None:
        """``immediate`` is a crash: no checkpoint, no flush of what is not on disk yet."""
        self.run(["pg_ctl", "-D", str(self.data), "-w", "-m", mode, "stop"])

    def crash(self) -> None:
        """``pg_ctl stop -m immediate``, then a start: crash recovery replays what is on disk."""
        self.stop("immediate")
        self.start()

    def snapshot(self, name: str) -> Path:
        """A disk snapshot of the data directory as a volume snapshot of a running server takes
        it: every process of the cluster stopped (SIGSTOP) for the copy and continued
        (SIGCONT), so the copy is what a crash at that instant leaves on disk, and the server
        itself never restarts. Restored, it comes back with the same system identifier,
        timeline and database OIDs."""
        copy = self.root / f"{self.data.name}.{name}"
        pids = self.pids()
        _signal(pids, signal.SIGSTOP)
        try:
            self.as_postgres(["cp", "-a", str(self.data), str(copy)])
        finally:
            _signal(pids, signal.SIGCONT)
        # Its postmaster's pid: a restore on another boot never finds that one running.
        self.as_postgres(["rm", str(copy / "postmaster.pid")])
        return copy

    def pids(self) -> list[int]:
        """The postmaster (first line of ``postmaster.pid``) and its children."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:  # exited meanwhile
                continue
            if int(fields[1]) == postmaster:
                children.append(int(stat.parent.name))
        return [postmaster, *children]

    def restore(self, snapshot: Path) -> None:
        """The server stopped (a crash), its data directory replaced by ``snapshot``, started:
        every commit since the snapshot is gone."""
        self.stop("immediate")
        self.as_postgres(["rm", "-rf", str(self.data)])
        self.as_postgres(["cp", "-a", str(snapshot), str(self.data)])
        self.start()

    def standby(self, name: str) -> Cluster:
        """A streaming hot standby of this cluster (``pg_basebackup -R``), not started."""
        replica = Cluster(self.root, name, self.settings)
        self.run(
            [
                *("pg_basebackup", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"),
                *("-D", str(replica.data), "-R", "-X", "stream", "-c", "fast"),
            ]
        )
        return replica

    def promote(self) -> None:
        self.run(["pg_ctl", "-D", str(self.data), "-w", "promote"])

    def as_postgres(self, args: list[str]) -> None:
        """A program on PATH, as user postgres."""
        subprocess.run(
            [*AS_POSTGRES, *args],
            check=True,
            capture_output=True,
            cwd=self.root,
            env={"PATH": "/usr/bin:/bin"},
        )

    def url(self, dbname: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def connect(self, dbname: str) -> psycopg.Connection[Any]:
        return psycopg.connect(self.url(dbname), autocommit=True, connect_timeout=10)

    def database(self, name: str, nodes: object = None, ttl_ceiling_s: float | None = None) -> str:
        """A new database with the idfields tables and functions (on ``nodes``), and a lease
        ttl ceiling where given: the grace after a loss covers it (the default: 60 s)."""
        with self.connect("postgres") as conn:
            conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
        with self.connect(name) as conn:
            conn.execute(TABLES)
            conn.execute(sql.load(sql.VERSION, nodes=nodes).encode())
            if ttl_ceiling_s is not None:
                conn.execute(
                    "INSERT INTO idfields_counter (name, value) VALUES (%s, %s)",
                    ["lease ttl ceiling ms", round(ttl_ceiling_s * 1000)],
                )
        return name


def _signal(pids: list[int], which: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # a child that exited meanwhile
            os.kill(pid, which)


@contextmanager
def started_cluster(
    name: str, settings: dict[str, str] | None = None, *, faked: bool = False
) -> Iterator[Cluster]:
    """A :class:`Cluster` initdb'd and started in a :func:`cluster_root` of its own."""
    with cluster_root() as root:
        cluster = Cluster(root, name, settings, faked=faked).init()
        cluster.start()
        yield cluster


@contextmanager
def cluster_root() -> Iterator[Path]:
    """A directory user postgres owns, removed with every cluster in it."""
    root = Path(tempfile.mkdtemp(prefix="idfields-cluster-"))
    postgres = pwd.getpwnam("postgres")
    os.chown(root, postgres.pw_uid, postgres.pw_gid)
    os.chmod(root, 0o755)
    try:
        yield root
    finally:
        for data in root.glob("*/postmaster.pid"):
            subprocess.run(
                [
                    *AS_POSTGRES,
                    str(PG_BIN / "pg_ctl"),
                    "-D",
                    str(data.parent),
                    "-m",
                    "immediate",
                    "stop",
                ],
                capture_output=True,
                check=False,
            )
        shutil.rmtree(root)
