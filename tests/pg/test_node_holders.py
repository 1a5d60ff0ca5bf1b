"""One view of who holds which node: database backends beside app processes, and a dead
backend's node taken back before its lease ends, behind its own expiry (invariants L3 and L4 of
docs/explanation/lease-protocol.md)."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dbapi_database import DbApiDatabase

from idfields import NodeError, make_generator
from idfields.coordination import LeaseSource, list_leases
from idfields.coordination._report import holder_rows
from idfields.layouts import SNOWFLAKE_EPOCH, Layout, Node, Sequence, Timestamp
from tests.pg.conftest import Connect

pytestmark = pytest.mark.postgres


def _one_node_layout() -> Layout:
    return Layout(
        f"backend_{secrets.token_hex(4)}",
        [Timestamp(41, epoch=SNOWFLAKE_EPOCH), Node(10, maximum=0), Sequence(12)],
    )


def _backend_takes(connect: Connect, layout: Layout) -> tuple[int, int]:
    """A real backend writes its own holder string on node 0, as next_*() does (expiry 2 s
    out); returns its pid and when it claimed."""
    conn = connect()
    row = conn.execute(
        "INSERT INTO idfields_node_lease (layout, node, holder, acquired_at_ms, expires_at_ms) "
        "SELECT %s, 0, idfields.backend_holder(), idfields.clock_ms(), "
        "idfields.clock_ms() + 2000 RETURNING pg_backend_pid(), acquired_at_ms",
        [layout.lease_key],
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_a_live_backends_node_is_left_and_a_dead_ones_taken_back_behind_its_fence(
    connect: Connect, postgres_url: str
) -> None:
    layout = _one_node_layout()
    db = DbApiDatabase("postgresql", postgres_url)
    pid, acquired = _backend_takes(connect, layout)
    with pytest.raises(NodeError, match="no free node"):
        LeaseSource(db).acquire(layout)  # the backend lives: its node is its own
    [row] = holder_rows(list_leases(db, layout.lease_key))
    assert row[2:5] == ("database", "database backend", str(pid)) and row[-1] == "live"
    with connect() as admin:
        # with a timeout it returns once the backend is gone, its advisory locks with it
        gone = admin.execute("SELECT pg_terminate_backend(%s, 5000)", [pid]).fetchone()
        assert gone == (True,)

    # A claimer 1.1 s later: the lease has 0.9 s left, within a generator's run-ahead.
    def later() -> int:
        return time.time_ns() + 1_100_000_000

    generator = make_generator(layout, LeaseSource(db, clock=later), clock=later)
    first = generator()  # before the 2 s lease ends...
    assert generator.node == {"node": 0}
    stamped = layout.decode(first).time_ns
    assert stamped is not None and stamped // 10**6 > acquired + 2000  # ...behind its expiry
    generator.close()
    db.close()


def test_the_nodes_command_shows_app_and_database_holders_together(
    connect: Connect, postgres_url: str
) -> None:
    backend = connect()
    pid = backend.execute("SELECT pg_backend_pid(), idfields.next_snowflake()").fetchone()[0]  # type: ignore[index]
    db = DbApiDatabase("postgresql", postgres_url)
    generator = make_generator("snowflake", LeaseSource(db))
    generator()
    url = postgres_url.replace("postgresql://", "postgresql+psycopg://", 1)
    shown = subprocess.run(
        [sys.executable, "-m", "idfields.sqlalchemy_ext", "nodes", url, "--layout", "snowflake"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines = shown.splitlines()
    assert lines[0].split()[:4] == ["layout", "node", "kind", "host"]
    assert any(" database " in line and f" {pid} " in line and "live" in line for line in lines)
    assert any(" app " in line and f" {os.getpid()} " in line and "live" in line for line in lines)
    assert "snowflake: " in shown and "nodes free" in shown and "restarts/s" in shown
    generator.close()
    db.close()


def test_the_sql_view_shows_app_and_database_holders_alike(
    connect: Connect, postgres_url: str
) -> None:
    layout = _one_node_layout()
    pid, _ = _backend_takes(connect, layout)
    db = DbApiDatabase("postgresql", postgres_url)
    generator = make_generator("snowflake", LeaseSource(db))
    generator()
    rows = (
        connect()
        .execute(
            "SELECT layout, kind, host, pid, state FROM idfields.node_holders "
            "WHERE layout = %s OR (layout = 'snowflake' AND pid = %s)",
            [layout.lease_key, os.getpid()],
        )
        .fetchall()
    )
    assert (layout.lease_key, "database", "database backend", pid, "live") in rows
    assert ("snowflake", "app", socket.gethostname()[:180], os.getpid(), "live") in rows
    with connect() as admin:
        # with a timeout it returns once the backend is gone, its advisory locks with it
        gone = admin.execute("SELECT pg_terminate_backend(%s, 5000)", [pid]).fetchone()
        assert gone == (True,)
    state = (
        connect()
        .execute("SELECT state FROM idfields.node_holders WHERE layout = %s", [layout.lease_key])
        .fetchone()
    )
    assert state == ("dead",)
    generator.close()
    db.close()


ACTOR = Path(__file__).resolve().parents[1] / "coordination" / "lease_actor.py"


def test_the_view_and_the_report_agree_but_on_app_processes_only_the_report_can_check(
    connect: Connect, postgres_url: str, tmp_path: Path
) -> None:
    """docs/how-to/operating-at-scale.md "Who holds which node": a backend gone from
    pg_stat_activity is dead in both; a SIGKILLed app process of this host is dead in the report
    (``idfields_nodes``, ``holder_rows``), which checks its pid here, and live in the view, which
    cannot see this host's processes, until its lease ends."""
    name = f"killed_{secrets.token_hex(4)}"
    out = tmp_path / "ids"
    tests = ACTOR.parents[1]
    log = tmp_path / "actor.log"
    with log.open("wb") as stderr:
        actor = subprocess.Popen(
            [sys.executable, str(ACTOR), "postgresql", postgres_url, name, "1", "60", str(out)],
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), str(tests.parent)])},
            stderr=stderr,
        )
        marker = Path(f"{out}.node")
        deadline = time.monotonic() + 60
        while not marker.exists() and actor.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert marker.exists() and marker.read_text() == "0", log.read_text()
        actor.send_signal(signal.SIGKILL)  # holds its lease: a killed worker cannot give it back
        actor.wait()
    backend_layout = _one_node_layout()
    backend, _ = _backend_takes(connect, backend_layout)
    with connect() as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s, 5000)", [backend]).fetchone()
    db = DbApiDatabase("postgresql", postgres_url)
    try:
        report = {
            (row[0].split("#")[0], row[2]): row[-1]
            for key in (name, backend_layout.name)
            for row in holder_rows(list_leases(db, key))
        }
    finally:
        db.close()
    view = dict(
        connect()
        .execute(
            "SELECT split_part(layout, '#', 1) || ':' || kind, state FROM idfields.node_holders "
            "WHERE split_part(layout, '#', 1) IN (%s, %s)",
            [name, backend_layout.name],
        )
        .fetchall()
    )
    assert report == {(name, "app"): "dead", (backend_layout.name, "database"): "dead"}
    assert view == {f"{name}:app": "live", f"{backend_layout.name}:database": "dead"}
