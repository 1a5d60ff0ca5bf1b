"""A server clock that lies: backends issuing while a throwaway PostgreSQL 15 cluster's clock is
stepped back by libfaketime (a clock file the server rereads on every call), restarted behind
the durable fences, and an idle backend resuming inside its old limit after another backend
took its node. Run on the C path (idfields_native wired in) and on PL/pgSQL alike. Skipped
where faketime, PostgreSQL 15's initdb or root (to run the cluster as user postgres) is
missing."""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import databases
import psycopg
import pytest
from needs import NEEDS
from psycopg import sql as pgsql

from idfields import sql
from tests.pg.conftest import TABLES, run_in_threads
from tests.pg.throwaway import postgres_user

SNOWFLAKE_EPOCH_MS = 1_704_067_200_000
FAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _missing() -> str | None:
    """Why no cluster on a faked clock can run here, saying how to get it; None if it can."""
    if not FAKETIME.exists():
        return NEEDS["faketime"]
    if not (PG_BIN / "initdb").exists():
        return f"{PG_BIN / 'initdb'} is missing: apt-get install postgresql-15"
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return NEEDS["root"]
    if not postgres_user():
        return "no postgres account to run the cluster as: apt-get install postgresql-15"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")

NODE = {"snowflake": lambda i: (i >> 12) & 1023, "traceid": lambda i: (i >> 22) & 65535}
# The snowflake lease (2 s) and its limit's lead (an eighth of it).
LEASE_MS = 2000


class Cluster:
    """A PostgreSQL 15 cluster of its own whose clock is ``offset`` seconds off the host's."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = databases.free_port()  # not another cluster's (parallel workers)
        self.clock = root / "clock"
        self.data = root / "pg"
        self.set_clock(0)
        self._as_postgres(
            [str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust"]
        )
        self.start()
        with self.connect("postgres") as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_available_extensions WHERE name = 'idfields_native'"
            ).fetchone()
        self.native = row is not None and row[0] > 0

    def _as_postgres(self, args: list[str]) -> None:
        """Run ``args`` as user postgres on the cluster's clock (preloaded past setpriv, which
        runs as root and may not open libfaketime's shared state)."""
        clock = [
            f"LD_PRELOAD={FAKETIME}",
            f"FAKETIME_TIMESTAMP_FILE={self.clock}",
            "FAKETIME_NO_CACHE=1",
            "FAKETIME_DONT_FAKE_MONOTONIC=1",
        ]
        subprocess.run(
            [
                "setpriv",
                "--reuid=postgres",
                "--regid=postgres",
                "--clear-groups",
                "env",
                *clock,
                *args,
            ],
            check=True,
            capture_output=True,
            cwd=self.root,
            env={"PATH": "/usr/bin:/bin"},
        )

    def set_clock(self, offset_s: float) -> None:
        """The server's clock from its next read on: the host's plus ``offset_s``."""
        self.clock.write_text(f"{offset_s:+.3f}\n")

    def start(self) -> None:
        self._as_postgres(
            [
                str(PG_BIN / "pg_ctl"),
                "-D",
                str(self.data),
                "-w",
                "-l",
                str(self.root / "log"),
                "-o",
                f"-p {self.port} -k {self.root} -c listen_addresses='' -c max_connections=20",
                "start",
            ]
        )

    def stop(self, mode: str = "fast") -> None:
        self._as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-w", "-m", mode, "stop"])

    def connect(self, dbname: str) -> psycopg.Connection[Any]:
        return psycopg.connect(
            host=str(self.root), port=self.port, user="postgres", dbname=dbname, autocommit=True
        )

    def database(self, name: str, path: str) -> str:
        """A new database with the tables and the functions, the C path wired in or not, and a
        2 s lease ttl ceiling: the grace after the module's restarts through crash recovery
        lasts 3 s, not the default 61."""
        with self.connect("postgres") as conn:
            conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
        with self.connect(name) as conn:
            if path == "native":
                conn.execute("CREATE EXTENSION idfields_native")
            conn.execute(TABLES)
            conn.execute(sql.load(sql.VERSION).encode())
            conn.execute("INSERT INTO idfields_counter VALUES ('lease ttl ceiling ms', 2000)")
            wired = conn.execute(
                "SELECT pg_get_functiondef('idfields.next_snowflake'::regproc) LIKE "
                "'%idfields_native%'"
            ).fetchone()
        assert wired is not None and wired[0] == (path == "native")
        return name


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    root = Path(tempfile.mkdtemp(prefix="idfields-clock-"))
    os.chown(root, pwd.getpwnam("postgres").pw_uid, pwd.getpwnam("postgres").pw_gid)
    os.chmod(root, 0o755)
    made = Cluster(root)
    os.chmod(made.clock, 0o644)
    try:
        yield made
    finally:
        made.stop("immediate")  # no shutdown checkpoint: the cluster is deleted
        shutil.rmtree(root)


@pytest.fixture(params=["native", "plpgsql"])
def database(request: pytest.FixtureRequest, cluster: Cluster) -> Iterator[str]:
    if request.param == "native" and not cluster.native:
        pytest.skip(NEEDS["native"].replace("<major>", "15"))
    cluster.set_clock(0)
    name = f"clock_{request.param}_{request.node.name.split('[')[0][-20:]}_{time.monotonic_ns()}"
    yield cluster.database(name, request.param)
    cluster.set_clock(0)


def ids(conn: psycopg.Connection[Any], layout: str, count: int) -> list[int]:
    return [
        int(r[0])
        for r in conn.execute(
            pgsql.SQL("SELECT idfields.{}() FROM generate_series(1, %s)").format(
                pgsql.Identifier(f"next_{layout}")
            ),
            [count],
        ).fetchall()
    ]


def issue_across_a_step(
    cluster: Cluster, db: str, layout: str, step_s: float, until_refused: bool = False
) -> tuple[dict[int, list[int]], list[psycopg.Error], int, float]:
    """Two backends issuing in statements of 50 IDs while the clock steps back ``step_s``;
    each keeps going (past any error) until it has issued 200 statements' worth after the
    step or seen 20 errors, and then, ``until_refused``, in statements of 20,000 until it is
    refused (a session's window, D9, holds a quarter of a second of IDs, about 1M). Also the
    unix ms the clock read just before the step, and the seconds from the step until both
    backends stopped issuing."""
    issued: dict[int, list[int]] = {0: [], 1: []}
    errors: list[psycopg.Error] = []
    stepped = threading.Event()
    ready = threading.Barrier(3, timeout=120)  # a backend that failed breaks it for all
    before_ms: list[int] = []

    def work(index: int) -> None:
        with cluster.connect(db) as conn:
            try:
                issued[index] += after_the_grace(lambda: ids(conn, layout, 50))
            except BaseException:
                ready.abort()
                raise
            ready.wait()
            stepped.wait()
            after = failed = 0
            while after < 200 and failed < 20:
                try:
                    issued[index] += ids(conn, layout, 50)
                    after += 1
                except psycopg.Error as error:
                    errors.append(error)
                    failed += 1
            for _ in range(100 if until_refused and not failed else 0):
                try:
                    issued[index] += ids(conn, layout, 20_000)
                except psycopg.Error as error:
                    errors.append(error)
                    break

    def stepper(index: int) -> None:
        if index == 2:
            ready.wait()
            before_ms.append(time.time_ns() // 1_000_000)
            cluster.set_clock(-step_s)
            stepped.set()
        else:
            work(index)

    run_in_threads(stepper, 3)
    return issued, errors, before_ms[0], time.time() - before_ms[0] / 1000


@pytest.mark.parametrize("step_s", [0.5, 1.5, 10, 3600])
def test_snowflake_backends_stepped_back_issue_increasing_ids_or_say_22008(
    cluster: Cluster, database: str, step_s: float
) -> None:
    """Past its window a backend refuses a clock 10 s or more behind its last ID; inside it,
    it goes on from that ID, no further than the window's end (a quarter of a second past the
    clock before the step, 250 ms: 300 with slack)."""
    issued, errors, before_ms, took_s = issue_across_a_step(
        cluster, database, "snowflake", step_s, until_refused=step_s >= 10
    )
    every = issued[0] + issued[1]
    assert len(set(every)) == len(every)
    for mine in issued.values():
        assert all(a < b for a, b in itertools.pairwise(mine))
    for error in errors:
        assert error.sqlstate == "22008", error
        assert "behind the last snowflake ID" in str(error)
        assert error.diag.message_hint is not None and "Wait" in error.diag.message_hint
    if step_s >= 10:
        # Refused while the clock is still over max_ahead + the 1 s wait behind the window's
        # end; a loaded machine can take longer than that to issue a window, and then the
        # clock has caught up and the IDs go on (increasing and unique, as checked above).
        assert errors or took_s > step_s / 2, f"no refusal {took_s:.1f} s after the step"
        # No further than the window's end, or than the clock once it caught up.
        caught_up_ms = max(0.0, took_s - step_s) * 1000
        assert max(every) >> 22 <= before_ms - SNOWFLAKE_EPOCH_MS + 300 + caught_up_ms


@pytest.mark.parametrize("step_s", [3, 10])
def test_a_traceid_backend_stepped_back_past_its_window_repeats_no_id(
    cluster: Cluster, database: str, step_s: int
) -> None:
    """A traceid backend issues through more seconds than the step, then the clock steps back
    ``step_s`` s. A wrapping layout unwraps its last tick against the clock, so a position more
    than max_ahead + 1 ticks ahead reads as a period behind: the backend goes on at the clock's
    tick. It holds its node's advisory lock and its own row covers the node's fence, so the
    continuation of its position (time_slow_path) takes the clock's tick as it stands, on the
    same node, from the first counter: the IDs of that second again. The CLOCK paragraph of
    0001.sql says such a step raises 22008 instead of repeating. The seconds before the step
    pass on the clock file, a second at a time, not in real time."""
    with cluster.connect(database) as conn:
        before = ids(conn, "traceid", 50)
        ahead = 0
        while (before[-1] >> 38) - (before[0] >> 38) <= step_s + 1:
            ahead += 1
            cluster.set_clock(ahead)
            before += ids(conn, "traceid", 50)
        # one node throughout, its lease renewed as in real time
        assert len({NODE["traceid"](one) for one in before}) == 1
        cluster.set_clock(ahead - step_s)
        after: list[int] = []
        errors: list[psycopg.Error] = []
        for _ in range(40):
            try:
                after += ids(conn, "traceid", 50)
            except psycopg.Error as error:
                errors.append(error)
    for error in errors:
        assert error.sqlstate == "22008", error
    again = sorted(set(before) & set(after))
    assert not again, (
        f"{len(again)} traceid IDs issued again after a {step_s} s step back, the first "
        f"{again[0]:#x} (node {NODE['traceid'](again[0])}, second {again[0] >> 38}); the "
        f"backend's last ID before the step was in second {before[-1] >> 38}"
    )


def after_the_grace(issue: Callable[[], list[int]]) -> list[int]:
    """``issue()`` once the server's grace after its restart has passed: until then a claim is
    refused (57P03, naming when it may retry), and nothing is issued."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return issue()
        except psycopg.errors.CannotConnectNow:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.parametrize("step_s", [10, 3600])
def test_a_restart_behind_the_fences_repeats_no_id(
    cluster: Cluster, database: str, step_s: float
) -> None:
    before: list[int] = []
    conns = [cluster.connect(database) for _ in range(2)]
    for conn in conns:
        before += ids(conn, "snowflake", 2000) + ids(conn, "traceid", 2000)
    for conn in conns:
        conn.close()
    cluster.set_clock(-step_s)
    cluster.stop()
    cluster.start()
    after: list[int] = []
    try:
        for _ in range(2):
            with cluster.connect(database) as conn:
                after += after_the_grace(lambda: ids(conn, "snowflake", 2000))
                after += after_the_grace(lambda: ids(conn, "traceid", 2000))
    except psycopg.errors.CannotConnectNow as refused:
        # A grace recorded before the step ends on the clock it began on, up to an hour away:
        # a refusal that says so, never an ID issued twice.
        assert step_s > 60 and "restarted or changed" in str(refused), refused
    assert not set(before) & set(after)
    assert len(set(after)) == len(after)


def test_an_idle_backend_resuming_inside_its_old_limit_after_a_step_back_repeats_no_id(
    cluster: Cluster, database: str
) -> None:
    """Backend A issues on node 0 (the one snowflake node free), lets go of its advisory locks
    (a job queue's pg_advisory_unlock_all()) and idles until its row lapses; backend B takes
    node 0 and issues. The clock then steps back to A's last ID: A goes on inside its old
    limit, B past A's promise (or says 22008); neither issues the other's IDs."""
    with cluster.connect(database) as setup:
        setup.execute(
            "INSERT INTO idfields_node_lease (layout, node, holder, acquired_at_ms, "
            "expires_at_ms) SELECT 'snowflake', n, 'blocker:1:x:1:tok', 0, 9000000000000 "
            "FROM generate_series(1, 1023) AS n"
        )
        with cluster.connect(database) as a, cluster.connect(database) as b:
            by_a = ids(a, "snowflake", 100)
            assert {NODE["snowflake"](i) for i in by_a} == {0}
            a.execute("SELECT pg_advisory_unlock_all()")
            ahead = 0.0  # A idles on the clock file, not in real time
            while setup.execute(
                "SELECT expires_at_ms >= idfields.clock_ms() FROM idfields_node_lease "
                "WHERE layout = 'snowflake' AND node = 0"
            ).fetchone() != (False,):
                ahead += 0.25
                cluster.set_clock(ahead)
            by_b = ids(b, "snowflake", 3000)
            assert {NODE["snowflake"](i) for i in by_b} == {0}
            cluster.set_clock(ahead - ((max(by_b) >> 22) - (max(by_a) >> 22) + 1) / 1000)
            resumed = 0
            for conn, mine in ((a, by_a), (b, by_b), (a, by_a), (b, by_b)):
                try:
                    more = ids(conn, "snowflake", 3000)
                except psycopg.Error as error:
                    assert error.sqlstate in {"22008", "53400"}, error
                    continue
                mine += more
                resumed += conn is a
    assert resumed, "A never went on inside its old limit: the step missed its window"
    every = by_a + by_b
    assert len(set(every)) == len(every)


def test_traceid_backends_across_the_2_pow_25_s_wrap_repeat_no_id(
    cluster: Cluster, database: str
) -> None:
    """The clock set 3 s before a wrap of traceid's 25-bit seconds (unix 54 * 2^25 s), running
    five times as fast: two backends issue into the seconds after it, each going down once, at
    the wrap."""
    wrap = 54 << 25
    offset = wrap - 3 - time.time()
    cluster.set_clock(offset)
    issued: dict[int, list[int]] = {0: [], 1: []}

    def past_the_wrap(index: int) -> bool:  # in second 2 after it, or later
        return bool(issued[index]) and 2 <= issued[index][-1] >> 38 < 1000

    def work(index: int) -> None:
        if index == 2:  # the clock: 0.5 s on for every 0.1 s of real time
            ahead = offset
            while not (past_the_wrap(0) and past_the_wrap(1)):
                time.sleep(0.1)
                ahead += 0.4
                cluster.set_clock(ahead)
            return
        with cluster.connect(database) as conn:
            while not past_the_wrap(index):
                issued[index] += ids(conn, "traceid", 50)

    run_in_threads(work, 3)
    every = issued[0] + issued[1]
    assert len(set(every)) == len(every)
    for mine in issued.values():
        assert mine[0] >> 38 >= (1 << 25) - 3
        assert sum(1 for a, b in itertools.pairwise(mine) if b <= a) == 1
