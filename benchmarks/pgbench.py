"""Single-row autocommit throughput, pgbench-style: N clients, one statement per transaction.

With ``synchronous_commit = on`` (the default, what an application gets) every key kind waits
for the same WAL flush per commit; with ``off`` that wait, most of the time and most of the noise
on a shared disk, is gone and the figure is what the key kind costs the server per transaction.

With the ``pgbench`` binary on PATH, it runs a custom script (``-n -f``, no vacuum, no built-in
tables) and the figure is its "tps ... without initial connection time". Without it, N Python
processes each open one autocommit psycopg connection and send the statement in a loop for the
same time; the figure is the total transactions over the slowest client's time.

The protocol is either ``simple`` (every statement parsed and planned again: pgbench's default,
psycopg 2, most ORMs) or ``prepared`` (planned once per session: ``pgbench -M prepared``, what
psycopg 3 does after ``prepare_threshold`` executions, asyncpg, and apps behind PgBouncer 1.21+
with prepared statements). A key kind's default is planned with the statement, so the two can
rank key kinds differently; the report has a row for each.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

from benchmarks.processes import gather

_TPS = re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)", re.MULTILINE)


class Pgbench:
    """Runs a one-statement script against ``url``; ``how`` says which driver measured."""

    def __init__(
        self,
        url: str,
        *,
        quick: bool,
        synchronous_commit: bool = True,
        prepared: bool = False,
        search_path: str | None = None,
    ) -> None:
        self.url = url
        self.options = f"-c synchronous_commit={'on' if synchronous_commit else 'off'}"
        if search_path is not None:  # every session's, e.g. for a peer whose SQL names no schema
            self.options += f" -c search_path={search_path}"
        self.prepared = prepared
        self.protocol = "prepared" if prepared else "simple"
        self.binary = shutil.which("pgbench")
        self.seconds = 3
        # quick: a fixed number of transactions per client instead of a time (pgbench -t)
        self.transactions = 100 if quick else None
        run = f"{self.transactions} transactions a client" if quick else f"{self.seconds} s a run"
        driver = (
            f"pgbench -n -M {self.protocol} -f script"
            if self.binary
            else f"Python driver, {self.protocol} (no pgbench on PATH)"
        )
        self.how = f"{driver}, {run}, synchronous_commit={'on' if synchronous_commit else 'off'}"

    def tps(self, statement: str, clients: int) -> float:
        """Transactions per second of ``clients`` sessions sending ``statement``."""
        if self.binary is None:
            seconds = 0.3 if self.transactions else self.seconds
            return _python_tps(
                self.url, self.options, statement, clients, seconds, prepared=self.prepared
            )
        parts = urlsplit(self.url)
        env = {**os.environ, "PGOPTIONS": self.options}
        if parts.password:
            env["PGPASSWORD"] = unquote(parts.password)
        with tempfile.TemporaryDirectory() as folder:
            script = Path(folder) / "insert.sql"
            script.write_text(statement + "\n")
            command = [
                self.binary, "-n", "-M", self.protocol, "-f", str(script), "-c", str(clients),
                "-j", str(min(clients, os.cpu_count() or 1)), *self._length(),
                "-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432),
                "-U", unquote(parts.username or "postgres"),
                unquote(parts.path.lstrip("/")) or "postgres",
            ]  # fmt: skip
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        found = _TPS.search(done.stdout)
        if done.returncode != 0 or found is None:
            raise RuntimeError(f"pgbench failed ({done.returncode}): {done.stderr.strip()[-500:]}")
        return float(found.group(1))

    def _length(self) -> list[str]:
        if self.transactions:
            return ["-t", str(self.transactions)]
        return ["-T", str(self.seconds)]


def _client(
    url: str,
    options: str,
    statement: str,
    prepared: bool,
    seconds: float,
    start: float,
    out: object,
) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True, options=options) as conn:
        # connection set-up and a first statement (the prepare) outside the timing
        conn.execute(statement, prepare=prepared)
        while time.time() < start:
            time.sleep(0.001)
        done, began = 0, time.perf_counter()
        while time.perf_counter() - began < seconds:
            conn.execute(statement, prepare=prepared)
            done += 1
        out.put((done, time.perf_counter() - began))  # type: ignore[attr-defined]


def _python_tps(
    url: str, options: str, statement: str, clients: int, seconds: float, *, prepared: bool
) -> float:
    start = time.time() + 1.0
    results: list[tuple[int, float]] = gather(
        multiprocessing.get_context("spawn"),
        _client,
        (url, options, statement, prepared, seconds, start),
        clients,
    )
    return sum(done for done, _ in results) / max(spent for _, spent in results)
