"""A live holder's node is never taken, wherever the holder and the claimer run: other PID or
time namespaces on the same host and boot, a ``/proc`` the claimer cannot read, clocks that
disagree. Each holder and claimer is a program of its own (``lease_actor.py``) started the way
containers start it; every ID each of them issued is counted for duplicates.

See docs/explanation/lease-protocol.md: invariants L3 (anything unproven is alive) and L4 (the
fence is the holder's own number).
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dbapi_database import SCHEMA, DbApiDatabase
from needs import NEEDS

from idfields.coordination import _holders as holder_strings

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason=NEEDS["root"]),
]

ACTOR = Path(__file__).with_name("lease_actor.py")
TESTS = Path(__file__).parent.parent
PID_NAMESPACE = ["unshare", "--pid", "--fork", "--mount-proc"]
# A PID namespace still seeing the host's /proc, whose pids are not its own.
PID_NAMESPACE_HOST_PROC = ["unshare", "--pid", "--fork"]
TIME_NAMESPACE = ["unshare", "--time", "--boottime", "1000", "--fork"]
# A claimer as user nobody behind a /proc mounted with hidepid=invisible (systemd's
# ProtectProc=invisible): other users' processes are not there to read.
HIDEPID = [
    "unshare",
    "--mount",
    "--propagation",
    "private",
    "sh",
    "-c",
    "mount -t proc -o hidepid=invisible proc /proc && exec setpriv --reuid=65534 "
    '--regid=65534 --clear-groups "$@"',
    "hidepid",
]


def _faketime(offset: str) -> list[str]:
    if shutil.which("faketime") is None:
        pytest.fail("faketime is missing: apt-get install -y faketime (.ci/run does)")
    return ["faketime", "-f", offset]


@pytest.fixture
def core_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The environment of the actors: the compiled core, or the pure-Python one where a test
    parametrises this fixture (a claim judges liveness the same on both; only the fence an
    issuing claimer keeps is the core's)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])}
    env.pop("IDFIELDS_PURE_PYTHON", None)
    if getattr(request, "param", "compiled") == "pure":
        env["IDFIELDS_PURE_PYTHON"] = "1"
    return env


@pytest.fixture
def shared_db(db: DbApiDatabase) -> Iterator[DbApiDatabase]:
    """``db``, or for SQLite a file that user nobody can write too (pytest's folders are root's)."""
    if db.vendor != "sqlite":
        yield db
        return
    folder = Path(tempfile.mkdtemp(prefix="idfields-liveness-"))
    folder.chmod(0o1777)
    path = folder / "leases.sqlite3"
    database = DbApiDatabase("sqlite", str(path))
    for statement in SCHEMA["sqlite"]:
        database.execute(statement)
    path.chmod(0o666)
    yield database
    database.close()
    shutil.rmtree(folder)


@dataclass
class Actor:
    process: subprocess.Popen[bytes]
    out: Path

    def node(self) -> str:
        """The node it holds, or "none"; waits for it to say."""
        marker = Path(f"{self.out}.node")
        deadline = time.monotonic() + 60
        while not marker.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                _, err = self.process.communicate()
                raise AssertionError(f"actor {self.out.name} failed: {err.decode()[-2000:]}")
            time.sleep(0.01)
        return marker.read_text()

    def stop(self) -> None:
        Path(f"{self.out}.stop").touch()
        _, err = self.process.communicate(timeout=60)
        assert self.process.returncode == 0, err.decode()[-2000:]

    def ids(self) -> list[int]:
        data = self.out.read_bytes() if self.out.exists() else b""
        return list(struct.unpack(f"<{len(data) // 8}q", data))


class Scene:
    """Actors of one test on one layout, and the duplicates among everything they issued."""

    def __init__(self, database: DbApiDatabase, env: dict[str, str], folder: Path) -> None:
        self.database, self.env, self.folder = database, env, folder
        self.layout = f"live_{os.urandom(4).hex()}"
        self.actors: list[Actor] = []

    def start(self, prefix: list[str], *, nodes: int, ttl_s: float) -> Actor:
        out = self.folder / f"actor{len(self.actors)}.ids"
        out.touch()
        out.chmod(0o666)
        command = [
            *prefix,
            sys.executable,
            str(ACTOR),
            self.database.vendor,
            self.database.target,
            self.layout,
            str(nodes),
            str(ttl_s),
            str(out),
        ]
        process = subprocess.Popen(command, env=self.env, stderr=subprocess.PIPE)
        actor = Actor(process, out)
        self.actors.append(actor)
        return actor

    def duplicates(self) -> int:
        issued = [one for actor in self.actors for one in actor.ids()]
        return len(issued) - len(set(issued))


@pytest.fixture
def scene(shared_db: DbApiDatabase, core_env: dict[str, str]) -> Iterator[Scene]:
    folder = Path(tempfile.mkdtemp(prefix="idfields-actors-"))
    folder.chmod(0o1777)
    made = Scene(shared_db, core_env, folder)
    yield made
    for actor in made.actors:
        if actor.process.poll() is None:
            actor.process.kill()
            actor.process.wait()
    shutil.rmtree(folder)


def _claim_while_held(scene: Scene, holder: list[str], claimer: list[str]) -> tuple[str, int]:
    """Two holders hold both nodes; a third process claims. Returns what the claimer got and
    the duplicates among all three once the claimer issued for 2.5 s (any node it took was a
    live holder's, which goes on issuing until its next renewal, 10 s later)."""
    holders = [scene.start(holder, nodes=2, ttl_s=30) for _ in range(2)]
    assert sorted(actor.node() for actor in holders) == ["0", "1"]
    third = scene.start(claimer, nodes=2, ttl_s=30)
    got = third.node()
    if got != "none":
        time.sleep(2.5)
    for actor in [*holders, third]:
        actor.stop()
    return got, scene.duplicates()


@pytest.mark.parametrize(
    "namespace", [PID_NAMESPACE, PID_NAMESPACE_HOST_PROC], ids=["own proc", "host proc"]
)
def test_holders_in_other_pid_namespaces_are_alive(scene: Scene, namespace: list[str]) -> None:
    """Containers sharing the host's name and boot id: each holder is pid 1 of its own
    namespace, and so is the claimer. None can prove another dead."""
    got, duplicates = _claim_while_held(scene, namespace, namespace)
    assert (got, duplicates) == ("none", 0)


def test_a_holder_the_claimer_cannot_see_is_alive(scene: Scene) -> None:
    """A claimer of another user behind hidepid=invisible reads no /proc entry of the holders."""
    got, duplicates = _claim_while_held(scene, [], HIDEPID)
    assert (got, duplicates) == ("none", 0)


def test_holders_in_another_time_namespace_are_alive(scene: Scene) -> None:
    """Their /proc start times read 1000 s apart from the claimer's side: not a reused pid."""
    got, duplicates = _claim_while_held(scene, TIME_NAMESPACE, [])
    assert (got, duplicates) == ("none", 0)


@pytest.mark.parametrize("core_env", ["compiled", "pure"], indirect=True)
@pytest.mark.parametrize(("holder_clock", "claimer_clock"), [("+3s", "+0s"), ("+0s", "+3s")])
def test_a_dead_holder_is_fenced_by_its_own_record_whatever_the_clocks(
    scene: Scene, holder_clock: str, claimer_clock: str
) -> None:
    """A holder on a clock of its own (ttl 4 s) issues for 2 s, renewing once, and dies; a
    process of the next deploy (ttl 9 s) on another clock claims at once and issues for 1 s.
    Whether it takes the node at once, later, or not at all, none of its IDs is the dead
    holder's. (The holder 3 s ahead leaves a record too far ahead to take now; the claimer 3 s
    ahead takes the node from the dead holder, fenced at its record.)"""
    holder = scene.start(_faketime(holder_clock), nodes=1, ttl_s=4)
    assert holder.node() == "0"
    time.sleep(2)
    holder.stop()  # gone, reaped: provably dead on this host
    claimer = scene.start(_faketime(claimer_clock), nodes=1, ttl_s=9)
    if claimer.node() != "none":
        time.sleep(1)
    claimer.stop()
    assert scene.duplicates() == 0


@pytest.mark.parametrize("host", ["pg", "pg:1", "db"])
def test_an_app_holder_is_never_read_as_a_database_backend(host: str) -> None:
    """A backend is judged by pg_stat_activity, which knows nothing of app processes: an app
    holder on a host named like the backends' prefix must stay an app holder (L3)."""
    app = holder_strings.parse(holder_strings.this_process(host))
    assert (app.kind, app.host, app.pid) == ("app", host, os.getpid())
    backend = holder_strings.parse("pg:4242:1700000000000")
    assert (backend.kind, backend.pid) == ("database", 4242)
