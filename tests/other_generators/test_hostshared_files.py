"""What operations do to the host-shared state file: another user, a tmp cleaner, a restored
backup, a truncation, a full tmpfs.

What each test guards against: a default path holding the uid gives two users on one host two
files on one node (here 100,000 duplicates of 200,000); a new process after the file was
deleted would repeat what the running ones issued (here 10,000 of 30,000); a truncated file or
a full tmpfs would kill the process with SIGBUS (exit -7, nothing printed).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from needs import NEEDS

from idfields.hostshared import FILE_SIZE, HostSharedGenerator, default_path
from idfields.layouts import SNOWFLAKE, Layout, Node, Sequence, Timestamp

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.core


class FakeClock:
    """A clock that moves only when slept on: runs on it are deterministic."""

    def __init__(self) -> None:
        self.now = 1_800_000_000_000_000_000

    def __call__(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += round(seconds * 1e9)


def on_clock(
    path: Path | None, clock: FakeClock, layout: str | Layout = "snowflake"
) -> HostSharedGenerator:
    return HostSharedGenerator(layout, node=7, path=path, clock=clock, sleep=clock.sleep)


def duplicates(ids: list[int]) -> int:
    return len(ids) - len(set(ids))


def in_child(work: Callable[[], str]) -> tuple[int, str]:
    """Run ``work`` in a forked child: (its exit code, what it returned); a signal shows as a
    negative code, as SIGBUS (-7) did."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(reader)
        code = 0
        try:
            said = work()
        except BaseException as error:
            said, code = f"{type(error).__name__}: {error}", 1
        os.write(writer, said.encode())
        os._exit(code)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        said = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), said


CHILD = """
import json, sys
from idfields.hostshared import HostSharedGenerator
from idfields.layouts import Layout

class FakeClock:
    def __init__(self): self.now = 1_800_000_000_000_000_000
    def __call__(self): return self.now
    def sleep(self, seconds): self.now += round(seconds * 1e9)

clock = FakeClock()
layout = Layout.from_spec(json.loads(sys.argv[1]))
try:
    ids = HostSharedGenerator(layout, node=7, clock=clock, sleep=clock.sleep).take(100_000)
except Exception as error:
    print(json.dumps({"error": str(error)}))
else:
    print(json.dumps({"ids": ids}))
"""


@pytest.fixture
def private_layout() -> Iterator[Layout]:
    """A layout of its own, so its default path (in /dev/shm) is this test's alone."""
    epoch = datetime(2025, 1, 1, tzinfo=UTC)
    layout = Layout(
        f"hostile_{secrets.token_hex(4)}",
        [Timestamp(41, unit="ms", epoch=epoch), Node(10), Sequence(12)],
    )
    yield layout
    for leftover in default_path(layout).parent.glob(f"idfields-*{layout.name}.state"):
        leftover.unlink()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason=NEEDS["root"])
def test_two_users_on_one_host_share_one_file_or_are_refused(private_layout: Layout) -> None:
    clock = FakeClock()
    ids = on_clock(None, clock, private_layout).take(100_000)  # root's workers
    other_user = subprocess.run(  # another user's workers, on the same node, at the same time
        [
            "setpriv",
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            sys.executable,
            "-c",
            CHILD,
            json.dumps(private_layout.to_spec()),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd="/",
        check=True,
    )
    answer = json.loads(other_user.stdout)
    ids += answer.get("ids", [])
    assert duplicates(ids) == 0
    assert (
        "belongs to user 'root' (uid 0) and this process runs as user 'nobody'" in answer["error"]
    )
    assert "run them as one user" in answer["error"]


def test_a_deleted_or_replaced_file_is_detected_and_fenced(tmp_path: Path) -> None:
    path, clock = tmp_path / "state", FakeClock()
    running = on_clock(path, clock)
    ids = running.take(10_000)
    path.unlink()  # a tmp cleaner, or systemd RemoveIPC
    started_after = on_clock(path, clock)  # a new process: a new file, past max_skew
    ids += started_after.take(10_000)
    ids += running.take(10_000)  # notices, and continues after both
    assert duplicates(ids) == 0
    backup = path.read_bytes()
    ids += running.take(10_000)
    restored = tmp_path / "restored"
    restored.write_bytes(backup)
    os.replace(restored, path)  # an old copy put back in place
    ids += running.take(10_000) + started_after.take(10_000)
    assert duplicates(ids) == 0


@pytest.mark.parametrize("size", [0, 20, FILE_SIZE - 1])
def test_a_truncated_file_is_refused_never_sigbus(tmp_path: Path, size: int) -> None:
    path = tmp_path / "state"

    def truncate_while_in_use() -> str:
        generator = HostSharedGenerator("snowflake", node=7, path=path)
        generator()
        os.truncate(path, size)
        generator()
        return "issued from a truncated file"

    code, said = in_child(truncate_while_in_use)
    assert (code, said.partition(":")[0]) == (1, "NodeError")
    assert f"was truncated to {size} bytes while in use" in said
    assert "Remove the file" in said


@pytest.fixture
def full_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 4 KiB tmpfs with no byte left (needs root; skips otherwise)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        filler = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(filler, b"x" * 512):
                pass
        except OSError:  # ENOSPC: full
            pass
        finally:
            os.close(filler)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_full_tmpfs_is_a_clear_error(full_tmpfs: Path) -> None:
    def first_id() -> str:
        return str(HostSharedGenerator("snowflake", node=7, path=full_tmpfs / "state")())

    code, said = in_child(first_id)
    assert (code, said.partition(":")[0]) == (1, "NodeError")
    assert "no space left for" in said and "a full tmpfs?" in said


def test_a_new_file_starts_past_max_skew(tmp_path: Path) -> None:
    """A file made from nothing cannot know a deleted predecessor's last ID, which was at most
    max_skew (1 s) ahead of the clock: its first tick is past that."""
    clock = FakeClock()
    start = clock.now
    first = on_clock(tmp_path / "state", clock)()
    assert SNOWFLAKE.decode(first).values["timestamp"] == SNOWFLAKE.tick_of(start) + 1001
    assert clock.now - start == 1_000_000  # it waited one tick for the skew bound
