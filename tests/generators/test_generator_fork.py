"""A generator made before fork() and first used after it: gunicorn --preload, Celery prefork.

The node belongs to the process that created the generator (or claimed a node for it); a child
that inherits it must take its own node from a lease source, or be refused, never share it.
Each case runs with ``os.fork()``; with fork(2) called from C (ctypes here; uWSGI's preforking
and extensions do the same), which runs none of Python's ``os.register_at_fork`` hooks; and with
forks that run no at-fork handler at all, not even ``pthread_atfork``'s: glibc's ``_Fork()``
(POSIX.1-2024, the async-signal-safe fork) and a raw ``clone`` system call.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import signal
import time
from array import array
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from generator_support import START_NS, fresh_node

from idfields import Assignment, Layout, NodeError, StaticNode, _forking, make_generator
from idfields.generators import IdGenerator
from idfields.hostshared import HostSharedGenerator

pytestmark = [pytest.mark.core, pytest.mark.slow]


Fork = Callable[[], int]
_libc = ctypes.CDLL(None, use_errno=True)
_libc.fork.restype = ctypes.c_int
_SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(os.uname().machine)


def _raw_clone() -> int:
    """``clone(SIGCHLD)`` as a bare system call: a fork the C library never sees."""
    return int(
        _libc.syscall(ctypes.c_long(_SYS_CLONE or -1), ctypes.c_ulong(signal.SIGCHLD), 0, 0, 0, 0)
    )


@pytest.fixture(params=["os.fork", "libc fork", "libc _Fork", "raw clone"])
def fork(request: pytest.FixtureRequest) -> Fork:
    """The fork primitive: Python's; the C library's (no at-fork hook of Python runs); or one
    that runs no at-fork handler of any kind."""
    if request.param == "os.fork":
        return os.fork
    if request.param == "libc fork":
        forked: Fork = _libc.fork
        return forked
    if request.param == "libc _Fork":
        if not hasattr(_libc, "_Fork"):  # pragma: no cover - glibc before 2.34, musl
            pytest.skip("this C library has no _Fork()")
        _libc._Fork.restype = ctypes.c_int
        forked = _libc._Fork
        return forked
    if _SYS_CLONE is None:  # pragma: no cover - another architecture
        pytest.skip(f"no clone system call number known for {os.uname().machine}")
    return _raw_clone


def _in_child(body: Callable[[], list[int]], out: Path, fork: Fork) -> int:
    """Fork; the child runs ``body`` and writes its IDs (or its NodeError) to ``out``."""
    pid = fork()
    assert pid >= 0, os.strerror(ctypes.get_errno())
    if pid == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            try:
                out.write_bytes(array("q", body()).tobytes())
            except NodeError as error:
                out.with_suffix(".error").write_text(str(error))
            code = 0
        finally:
            os._exit(code)
    return pid


def _child_ids(out: Path) -> list[int]:
    ids = array("q")
    if out.exists():
        ids.frombytes(out.read_bytes())
    return list(ids)


def _child_ids_apart_from(parent: list[int], pid: int, out: Path) -> list[int]:
    """Wait for the child; its IDs, none of which the parent issued too."""
    assert os.waitpid(pid, 0)[1] == 0
    child = _child_ids(out)
    duplicates = len(set(parent) & set(child))
    assert duplicates == 0, f"{duplicates:,} duplicates"
    return child


@pytest.fixture
def env_node(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    node = fresh_node()
    monkeypatch.setenv("IDFIELDS_NODE_ID", str(node))
    yield node


@pytest.mark.parametrize("how", ["node=", "IDFIELDS_NODE_ID"])
def test_a_fixed_node_made_before_fork_and_first_used_after_is_never_shared(
    how: str, tmp_path: Path, env_node: int, fork: Fork
) -> None:
    if how == "node=":
        generator = make_generator("snowflake", node=fresh_node())
    else:
        generator = make_generator("snowflake")
    out = tmp_path / "child"
    pid = _in_child(lambda: generator.take(300_000), out, fork)
    parent = generator.take(300_000)
    _child_ids_apart_from(parent, pid, out)
    message = out.with_suffix(".error").read_text()
    assert "belongs to the parent process" in message and "IDFIELDS_NODE_ID" in message
    assert generator.take(10)[0] > parent[-1]  # the parent keeps its node


def test_a_decimal_block_in_use_before_fork_is_never_continued_by_the_child(
    tmp_path: Path, fork: Fork
) -> None:
    generator = make_generator("decimal", StaticNode(generator_id=fresh_node(), launch_id=1))
    parent = [generator()]  # the block in use: its next 922 million IDs are the parent's
    out = tmp_path / "child"
    pid = _in_child(lambda: [generator() for _ in range(1000)], out, fork)  # the hot path
    parent += [generator() for _ in range(1000)]
    assert os.waitpid(pid, 0)[1] == 0
    assert _child_ids(out) == []
    assert "belongs to the parent process" in out.with_suffix(".error").read_text()
    assert parent == sorted(set(parent))


_POOL_GENERATOR: IdGenerator | None = None


def _pool_take(count: int) -> list[int] | str:
    assert _POOL_GENERATOR is not None
    try:
        return _POOL_GENERATOR.take(count)
    except NodeError as error:
        return str(error)


def test_a_module_level_generator_in_a_fork_pool_never_repeats() -> None:
    global _POOL_GENERATOR
    _POOL_GENERATOR = make_generator("snowflake", node=fresh_node())
    try:
        # close() and join(), not the with-block's terminate(): a SIGTERM handler another test
        # installed can meet a worker about to block, which then never exits and join() hangs.
        pool = multiprocessing.get_context("fork").Pool(4)
        try:
            results = pool.map(_pool_take, [50_000] * 4, chunksize=1)
        finally:
            pool.close()
            pool.join()
        ids = [value for result in results if isinstance(result, list) for value in result]
        duplicates = len(ids) - len(set(ids))
        assert duplicates == 0, f"{duplicates:,} duplicates of {len(ids):,}"
        assert all(isinstance(result, str) and "forked child" in result for result in results)
    finally:
        _POOL_GENERATOR = None


class PerProcess:
    """A lease-like source: a fresh node for every claim, whichever process asks."""

    def __init__(self) -> None:
        self.next_node = multiprocessing.get_context("fork").Value("i", 1)

    def acquire(self, layout: Layout) -> Assignment:
        with self.next_node.get_lock():
            node = self.next_node.value
            self.next_node.value += 1
        return Assignment({layout.node_fields[0].name: node})


def test_a_lease_source_made_before_fork_claims_anew_in_the_child(
    tmp_path: Path, fork: Fork
) -> None:
    generator = make_generator("snowflake", PerProcess())
    out = tmp_path / "child"
    pid = _in_child(lambda: generator.take(100_000), out, fork)
    parent = generator.take(100_000)
    assert os.waitpid(pid, 0)[1] == 0
    child = _child_ids(out)
    assert len(child) == 100_000 and not set(parent) & set(child)


def test_a_tick_in_use_before_fork_is_never_continued_by_the_child(
    tmp_path: Path, fork: Fork
) -> None:
    """Single calls on both sides (the hot path): the child never issues the rest of the tick
    (or the next ticks) on the parent's node, nor on the node the parent takes next."""
    generator = make_generator("snowflake", PerProcess())
    parent = [generator() for _ in range(10)]  # the tick in use has its sequence left
    out = tmp_path / "child"
    pid = _in_child(lambda: [generator() for _ in range(200_000)], out, fork)
    parent += [generator() for _ in range(200_000)]
    child = _child_ids_apart_from(parent, pid, out)
    assert len(child) == 200_000


def test_threads_of_a_child_racing_to_its_first_id_never_repeat(tmp_path: Path, fork: Fork) -> None:
    """The child's first IDs, from 8 threads at once: one claim, no ID of the parent's node."""
    generator = make_generator("snowflake", PerProcess())
    parent = generator.take(10)

    def in_threads() -> list[int]:
        with ThreadPoolExecutor(8) as pool:
            batches = list(pool.map(lambda _: [generator() for _ in range(20_000)], range(8)))
        return [value for batch in batches for value in batch]

    out = tmp_path / "child"
    pid = _in_child(in_threads, out, fork)
    parent += [generator() for _ in range(100_000)]
    child = _child_ids_apart_from(parent, pid, out)
    assert len(child) == len(set(child)) == 160_000


class Releases(PerProcess):
    """:class:`PerProcess` that records, in memory shared with children, who released a node."""

    def __init__(self) -> None:
        super().__init__()
        self.released_by = multiprocessing.get_context("fork").Array("i", 8)

    def acquire(self, layout: Layout) -> Assignment:
        claimed = super().acquire(layout)

        def release(issued_until_ns: int) -> None:
            with self.released_by.get_lock():
                self.released_by[claimed.values["node"]] = os.getpid()

        return Assignment(claimed.values, release=release)


@pytest.mark.parametrize("how", ["close()", "dropped"])
def test_a_child_ending_its_inherited_generator_never_frees_the_parents_node(
    how: str, tmp_path: Path, fork: Fork
) -> None:
    """close() in the child (as its atexit does), or the child dropping it: the parent's lease
    stays the parent's."""
    source = Releases()
    held = [make_generator("snowflake", source)]
    held[0]()  # the parent holds node 1

    def end() -> list[int]:
        if how == "close()":
            held[0].close()
        else:
            held.clear()
            gc.collect()
        return []

    pid = _in_child(end, tmp_path / "child", fork)
    assert os.waitpid(pid, 0)[1] == 0
    assert source.released_by[1] == 0, f"pid {source.released_by[1]} freed the parent's node"
    held[0].close()
    assert source.released_by[1] == os.getpid()


def test_a_host_shared_generator_in_use_before_fork_never_repeats(
    tmp_path: Path, fork: Fork
) -> None:
    """Parent and child at once on one state file: ``flock`` belongs to the open file, so the
    child must open its own before issuing, or both hold the lock at the same time."""
    generator = HostSharedGenerator("snowflake", node=fresh_node(), path=tmp_path / "state")
    parent = [generator()]  # the file is open, and locked by this open file on every call
    out = tmp_path / "child"
    pid = _in_child(lambda: [generator() for _ in range(100_000)], out, fork)
    parent += [generator() for _ in range(100_000)]
    child = _child_ids_apart_from(parent, pid, out)
    assert len(child) == 100_000


@pytest.mark.parametrize("mark", ["wiped page", "pid"])
def test_the_fork_mark_is_false_in_every_child_until_its_hooks_ran(
    mark: str, tmp_path: Path, fork: Fork
) -> None:
    """``_forking.live``, and its stand-in where the kernel wipes no page: what both hot paths'
    fork check reads in the pure core."""
    live = _forking.live if mark == "wiped page" else _forking._PidMark()
    out = tmp_path / "child"
    pid = _in_child(lambda: [int(live[()])], out, fork)
    assert os.waitpid(pid, 0)[1] == 0
    assert live[()] and _child_ids(out) == [0 if mark == "pid" or fork is not os.fork else 1]


class ForkingClock:
    """A clock that stands still (so the call in which it forks is in the tick in use) and forks
    once when armed: a fork in the middle of a call, between the clock read and the ID, as a
    signal handler that forks (from C or Python) would make."""

    def __init__(self, fork: Fork) -> None:
        self.fork = fork
        self.armed = False
        self.pid: int | None = None

    def __call__(self) -> int:
        if self.armed:
            self.armed = False
            self.pid = self.fork()
        return START_NS


def test_a_fork_in_the_middle_of_a_call_never_gives_the_child_that_calls_id(
    tmp_path: Path, fork: Fork
) -> None:
    clock = ForkingClock(fork)
    generator = make_generator("snowflake", PerProcess(), clock=clock)
    generator()  # the node is claimed and the tick in use: the next call takes the hot path
    clock.armed = True
    issued = [generator()]  # forks inside; both processes return from this call
    out = tmp_path / "child"
    if clock.pid == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            out.write_bytes(array("q", issued + [generator() for _ in range(1000)]).tobytes())
            code = 0
        finally:
            os._exit(code)
    assert clock.pid is not None and clock.pid > 0
    issued += [generator() for _ in range(1000)]
    assert os.waitpid(clock.pid, 0)[1] == 0
    child = _child_ids(out)
    duplicates = len(set(issued) & set(child))
    assert len(child) == 1001 and duplicates == 0, f"{duplicates:,} duplicates"


def test_a_lock_held_in_the_parent_at_the_fork_never_hangs_the_child(
    tmp_path: Path, fork: Fork
) -> None:
    """The generator's lock is held at the fork, as by a thread of the parent inside a call:
    no thread of the child ever releases it, so the child must not wait for it."""
    generator = make_generator("snowflake", PerProcess())
    parent = [generator()]
    out = tmp_path / "child"
    generator._lock.acquire()  # not reentrant: the forking thread holds it as another would
    try:
        pid = _in_child(lambda: [generator() for _ in range(1000)], out, fork)
    finally:
        generator._lock.release()
    parent += [generator() for _ in range(1000)]
    deadline = time.monotonic() + 60  # a bound for a hang, not a speed: the child needs ms
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the child waited for a lock no thread of it will release")
        time.sleep(0.01)
    assert done[1] == 0
    child = _child_ids(out)
    assert len(child) == 1000 and not set(parent) & set(child)
