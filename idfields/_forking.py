"""The one fork hook: objects holding per-process state (a node, a lock, an open file, a
connection) are told in the child, before any other code of ours runs there.

Two ways in. Python's own fork (``os.fork``, multiprocessing, gunicorn) runs the
``os.register_at_fork`` callbacks in the child while only the forking thread exists, so a lock
another thread held in the parent is replaced there, never waited on. fork(2) called from C
(ctypes, uWSGI preforking without ``py-call-osafterfork``, an extension) runs none of them: so
every path of ours that issues an ID, or gives a node back, first calls :func:`adopt` (the slow
paths) or reads :data:`live` (the pure-Python hot path), which see any fork, whoever called it.

:data:`live` is a byte of a page the kernel zeroes in every child (``MADV_WIPEONFORK``, Linux
4.14+), seen as a bool: ``live[()]`` is True in a process whose hooks ran and False in a child
until they have. A 0-d view, so a read converts no index and gives a bool: half the cost of
``page[0]`` on the hot path. Where the kernel has no such page it compares the pid instead (a
system call on every read). The compiled core reads the same byte (``idfields/_speedups.c``).

What belongs to one process records :func:`process` and compares it by identity, never a
pid: pids repeat across PID namespaces (a container's PID 1 forks a child into a new namespace,
where it is PID 1 too), while the fork hooks make a new :class:`Process` in every child.
"""

from __future__ import annotations

import mmap
import os
import threading
import weakref
from typing import Protocol

MADV_WIPEONFORK = 18  # linux/mman.h; Python's mmap module does not name it


class Forkable(Protocol):
    def forked(self) -> None:
        """In the child: drop what belongs to the parent (node, lock, file, connection)."""


class _PidMark:
    """:data:`live` where the kernel cannot wipe a page on fork: ``[()]`` is whether this is
    the process whose hooks ran."""

    def __init__(self) -> None:
        self.pid = os.getpid()

    def __getitem__(self, key: tuple[()]) -> bool:
        return os.getpid() == self.pid

    def __setitem__(self, key: tuple[()], value: bool) -> None:
        self.pid = os.getpid()


def _mark() -> memoryview[bool] | _PidMark:
    try:
        page = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        page.madvise(MADV_WIPEONFORK)
    except (AttributeError, OSError, ValueError):  # not Linux, or a kernel before 4.14
        return _PidMark()
    view = memoryview(page)[:1].cast("?", shape=[])  # keeps the page mapped
    view[()] = True
    return view


class Process:
    """One process, as an owner of per-process state; its pid is for messages only."""

    __slots__ = ("pid",)

    def __init__(self) -> None:
        self.pid = os.getpid()


live = _mark()
_this_process = Process()
_tracked: weakref.WeakSet[Forkable] = weakref.WeakSet()
_adoptions: dict[int, threading.Event] = {}  # pid -> set once its hooks ran (while they run)


def track(owner: Forkable) -> None:
    """Call ``owner.forked()`` in every child forked while ``owner`` lives."""
    _tracked.add(owner)


def process() -> Process:
    """This process (after :func:`adopt`, so a child forked from C is never taken for its
    parent): compare with ``is``."""
    adopt()
    return _this_process


def adopt() -> None:
    """In a child forked from C, run every hook before going on (once per process: the first
    caller runs them, other threads wait for it and try again if it failed); nothing to do
    elsewhere."""
    while not live[()]:
        pid = os.getpid()
        mine = threading.Event()
        running = _adoptions.setdefault(pid, mine)  # atomic: one thread wins
        if running is not mine:
            running.wait()
            continue
        try:
            if not live[()]:  # else another thread adopted between our look and our win
                _after_fork_in_child()
        finally:
            mine.set()
            del _adoptions[pid]  # a later child given this pid again must adopt too


def _after_fork_in_child() -> None:
    global _this_process
    _this_process = Process()
    for owner in list(_tracked):
        owner.forked()
    live[()] = True  # last: until here every hot path goes to a slow path, which waits in adopt()


os.register_at_fork(after_in_child=_after_fork_in_child)
