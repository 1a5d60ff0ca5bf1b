"""HostSharedGenerator: every process of a host issues IDs of one node through a shared state file.

Chronicle's DistributedUniqueTimeProvider keeps the host id and the last issued timestamp in
shared memory, so the JVMs of a host share one host id. Here the processes of a host (gunicorn or
uwsgi workers, Celery) share a small memory-mapped file: under ``flock`` a process reads the last
issued position (tick x IDs per tick + sequence index), takes the next ones, writes the new last
position and only then returns the IDs. N workers need one node, not N; IDs are unique across the
host's processes and increase within each.

A crash never lets an ID repeat. The kernel drops the lock of a killed process; the state is
written to the page cache (shared by every process), alternating between two checksummed slots,
so an update cut short leaves the previous slot intact, and the IDs of the cut update were never
returned.

What operations do to the file:

- **One file per host and layout, whoever the user** (no uid in the default path): processes of
  two users that cannot share the file are refused with the owner named, never given two files
  (two files on one node repeat each other's IDs).
- **Deleted or replaced while in use** (a tmp cleaner, systemd ``RemoveIPC``): every update
  first checks, under the lock, that the path still names the open file. If not, the process
  carries the last position it read into the file now at the path (creating it if needed).
- **A new file starts after ``max_skew``**: a file created from nothing cannot know what a
  deleted predecessor issued, but that was never more than ``max_skew`` ahead of the clock, so
  the new file's first tick is past it (its first ID waits one tick). The same holds after a
  reboot empties ``/dev/shm``, as long as the clock did not step back meanwhile.
- **Space is reserved when the file is created** (``posix_fallocate``): a full tmpfs is a clear
  error then, and the state is read and written with ``pread``/``pwrite``, never through a
  memory map, so a truncated file is a clear :class:`NodeError`, never a ``SIGBUS``.

Works with any layout with a timestamp and exactly one Node field: ``chronicle`` (readable ns
timestamps whose last two digits are the host) and ``snowflake`` among them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import pwd
import re
import struct
import tempfile
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

from idfields import _forking
from idfields.errors import ClockMovedBackwards, LayoutExhausted, NodeError, ValueOutOfRange
from idfields.generators._base import check_take_count
from idfields.layouts import Layout, get_layout
from idfields.nodes import EnvironmentNode, validate_values

__all__ = ["HostSharedGenerator"]

MAGIC = b"IDFHOST1"
_HEADER = struct.Struct("<8sQQ")  # magic, layout fingerprint, node
_SLOT = struct.Struct("<QqQ")  # generation, last position (-1: none yet), crc32 of the two
_PAIR = struct.Struct("<Qq")
_SLOTS = (_HEADER.size, _HEADER.size + _SLOT.size)
FILE_SIZE = _HEADER.size + 2 * _SLOT.size
DEFAULT_MAX_SKEW_NS = 1_000_000_000
_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def default_path(layout: Layout) -> Path:
    """``/dev/shm`` (memory, emptied at boot) when there is one, else the temp directory; one
    file per layout name whoever the user (a changed layout under the name is refused by the
    file's fingerprint, never given a file of its own)."""
    folder = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    return folder / f"idfields-{_NOT_A_NAME.sub('_', layout.name)}.state"


def fingerprint(layout: Layout) -> int:
    """Identifies the layout in the file, so processes with different layouts never share it."""
    return zlib.crc32(repr((layout.name, layout.fields, layout.base)).encode())


class HostSharedGenerator:
    """IDs of one node shared by all processes of a host; see the module docstring.

    ``node`` is the host's node (``host`` of ``chronicle``); without it the layout's environment
    variable is read (``IDFIELDS_HOST_ID``, ``IDFIELDS_NODE_ID``). Every process of the host must
    give the same node for the same file. The generator runs ahead of the clock by at most
    ``max_skew_ns`` (when a tick is used up, or the clock stepped back), waits at most
    ``max_wait_ns`` beyond that, then raises :class:`ClockMovedBackwards`.
    """

    def __init__(
        self,
        layout: str | Layout = "chronicle",
        *,
        node: int | None = None,
        path: str | os.PathLike[str] | None = None,
        clock: Callable[[], int] = time.time_ns,
        sleep: Callable[[float], None] = time.sleep,
        max_skew_ns: int = DEFAULT_MAX_SKEW_NS,
        max_wait_ns: int | None = None,
    ) -> None:
        self.layout = resolved = get_layout(layout)
        stamp = resolved.timestamp
        if stamp is None or len(resolved.node_fields) != 1:
            raise NodeError(
                f"layout {resolved.name!r} cannot be shared by a host's processes: it needs a "
                "timestamp and exactly one Node field (the host), like 'chronicle' or 'snowflake'"
            )
        if max_skew_ns < 0:
            raise ValueOutOfRange(f"max_skew_ns must be >= 0, got {max_skew_ns}")
        placed = resolved.node_fields[0]
        if node is None:
            values = EnvironmentNode().values_for(resolved)
        else:
            values = validate_values(resolved, {placed.name: node}, f"node={node!r}")
        self._node = values[placed.name]
        self.path = Path(path) if path is not None else default_path(resolved)
        self._clock = clock
        self._sleep = sleep
        self._geometry = geometry = resolved.geometry
        self._per_tick = geometry.ids_per_tick
        self._tick_mul = geometry.tick_multiplier
        self._modulus = geometry.modulus
        self._step = geometry.step
        self._skew_ticks = geometry.skew_ticks(max_skew_ns)
        self._max_wait_ns = max_skew_ns if max_wait_ns is None else max_wait_ns
        self._base = geometry.fixed + self._node * placed.multiplier
        # Distance between the IDs of consecutive positions when it is the same across ticks
        # (chronicle: one ID per tick; snowflake: the sequence fills the tick's whole range).
        spans = self._per_tick == 1 or self._step * self._per_tick == self._tick_mul
        self._stride = (self._tick_mul if self._per_tick == 1 else self._step) if spans else 0
        self._last = -1  # the last position this process reserved
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._inode: tuple[int, int] = (0, 0)
        self._open(-1)
        _forking.track(self)

    def __repr__(self) -> str:
        return f"<HostSharedGenerator {self.layout.name} node={self._node} path={self.path}>"

    @property
    def node(self) -> dict[str, int]:
        return {self.layout.node_fields[0].name: self._node}

    def __call__(self) -> int:
        _forking.adopt()  # a child forked from C must open the file again before the lock
        with self._lock:
            position = self._reserve(1)[0]
        tick, index = divmod(position, self._per_tick)
        return self._base + (tick % self._modulus) * self._tick_mul + index * self._step

    def take(self, count: int) -> list[int]:
        """``count`` increasing IDs, reserved under one lock (they may run ahead of the clock up
        to ``max_skew``, in as many rounds as that takes)."""
        count = check_take_count(count)
        ids: list[int] = []
        _forking.adopt()
        while len(ids) < count:
            with self._lock:
                first, got = self._reserve(count - len(ids))
            ids.extend(self._ids(first, got))
        return ids

    def _ids(self, first: int, count: int) -> list[int]:
        """The IDs of ``count`` positions from ``first``, tick by tick."""
        last_tick = (first + count - 1) // self._per_tick
        if self._stride and last_tick < self._modulus:  # evenly spaced, no wrap: one range
            tick, index = divmod(first, self._per_tick)
            start = self._base + tick * self._tick_mul + index * self._step
            return list(range(start, start + count * self._stride, self._stride))
        ids: list[int] = []
        position, end = first, first + count
        while position < end:
            tick, index = divmod(position, self._per_tick)
            chunk = min(end - position, self._per_tick - index)
            start = self._base + (tick % self._modulus) * self._tick_mul + index * self._step
            ids.extend(range(start, start + chunk * self._step, self._step))
            position += chunk
        return ids

    def _reserve(self, wanted: int) -> tuple[int, int]:
        """Take up to ``wanted`` positions after the host's last one; write it, then return."""
        waited_ns = 0
        while True:
            now = self._geometry.tick_of(self._clock())
            fd = self._opened()
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if not self._still_at_path():
                    self._carry_over(fd)
                    continue
                generation, last = _read_state(fd, self.path)
                first = max(now * self._per_tick, last + 1)
                limit = (now + self._skew_ticks + 1) * self._per_tick  # first position too far
                got = min(wanted, limit - first)
                if got > 0:
                    self._check_end((first + got - 1) // self._per_tick)
                    _write_state(fd, self.path, generation + 1, first + got - 1)
                    self._last = first + got - 1
                    return first, got
            finally:
                if self._fd == fd:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            waited_ns += self._wait(first // self._per_tick - now, waited_ns)

    def _carry_over(self, fd: int) -> None:
        """Leave a file that was deleted or replaced, remembering its last position for the file
        now at the path. An unreadable one is left behind: the new file starts past max_skew."""
        with contextlib.suppress(NodeError):
            self._last = max(self._last, _read_state(fd, self.path)[1])
        self._drop()

    def _still_at_path(self) -> bool:
        """Whether the path still names the open file (not deleted, not replaced)."""
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            return False
        return (found.st_dev, found.st_ino) == self._inode

    def _check_end(self, tick: int) -> None:
        max_tick = self._geometry.max_tick
        if max_tick is not None and tick > max_tick:
            raise LayoutExhausted(
                f"layout {self.layout.name!r} ran out of timestamps on "
                f"{self.layout.runs_out_text}; no ID was issued. Move to a layout with a later "
                "epoch or a wider timestamp"
            )

    def _wait(self, ahead_ticks: int, waited_ns: int) -> int:
        """Sleep (without the lock) until the clock is back within the skew bound, or raise."""
        unit_ns = self._geometry.unit_ns
        wait_ns = max(ahead_ticks - self._skew_ticks, 1) * unit_ns
        if waited_ns + wait_ns > self._max_wait_ns:
            raise ClockMovedBackwards(
                f"the clock is {ahead_ticks * unit_ns / 1e9:.3f} s behind the last ID of "
                f"{self.path} (layout {self.layout.name!r}, node {self._node}); the host runs "
                f"ahead at most {self._skew_ticks * unit_ns / 1e9:.3f} s (max_skew). No ID "
                "was issued: fix the host clock (NTP) or retry once it has caught up"
            )
        self._sleep(wait_ns / 1e9)
        return wait_ns

    def _opened(self) -> int:
        if self._fd is None:
            self._open(self._last)
        if self._fd is None:
            raise NodeError(f"could not open {self.path}")
        return self._fd

    def _open(self, known_last: int) -> None:
        """Open the state file (creating it if missing), check it is ours, and raise its last
        position to ``known_last`` (what this process saw in a file that was replaced)."""
        fd = self._open_or_create()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                found = os.fstat(fd)
                if found.st_size == 0:  # new: we won the race to fill it
                    self._initialise(fd, known_last)
                else:
                    self._check_header(fd)
                    generation, last = _read_state(fd, self.path)
                    if last < known_last:
                        _write_state(fd, self.path, generation + 1, known_last)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._inode = fd, (found.st_dev, found.st_ino)

    def _open_or_create(self) -> int:
        flags = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW
        while True:
            try:
                try:
                    return os.open(self.path, flags)
                except FileNotFoundError:
                    return os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:  # created by another process meanwhile: open that one
                continue
            except PermissionError:
                raise NodeError(self._permission_problem()) from None

    def _permission_problem(self) -> str:
        try:
            owner_uid = os.stat(self.path).st_uid
        except OSError:
            return (
                f"cannot create {self.path}: this process (uid {os.getuid()}) may not write to "
                f"{self.path.parent}; pass path= a file in a folder it may write to"
            )
        return (
            f"{self.path} belongs to {_user(owner_uid)} and this process runs as "
            f"{_user(os.getuid())}, which may not write to it. The processes of a host must "
            "share one state file per node, or they repeat each other's IDs: run them as one "
            "user, or give the file a group both users are in (chmod 660), or give this user "
            "another node and path"
        )

    def _initialise(self, fd: int, known_last: int) -> None:
        """Reserve the file's space, then write the header and a first position past anything
        a deleted predecessor may have issued (it ran at most max_skew ahead of the clock)."""
        try:
            os.posix_fallocate(fd, 0, FILE_SIZE)
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise
            raise NodeError(
                f"no space left for {self.path} ({FILE_SIZE} bytes): free space in "
                f"{self.path.parent} (a full tmpfs?) or pass path= on another file system"
            ) from None
        os.pwrite(fd, _HEADER.pack(MAGIC, fingerprint(self.layout), self._node), 0)
        after_skew = (self._geometry.tick_of(self._clock()) + self._skew_ticks + 1) * self._per_tick
        _write_state(fd, self.path, 0, max(known_last, after_skew - 1))

    def _check_header(self, fd: int) -> None:
        header = os.pread(fd, _HEADER.size, 0)
        size = os.fstat(fd).st_size
        if size != FILE_SIZE or len(header) != _HEADER.size:
            raise NodeError(
                f"{self.path} is not an idfields host state file ({size} bytes); pass another path"
            )
        magic, layout_print, node = _HEADER.unpack(header)
        problem = None
        if magic != MAGIC:
            problem = "is not an idfields host state file"
        elif layout_print != fingerprint(self.layout):
            problem = f"belongs to another layout than {self.layout.name!r}"
        elif node != self._node:
            problem = f"belongs to node {node}, but this process was given node {self._node}"
        if problem is not None:
            raise NodeError(
                f"{self.path} {problem}: the processes sharing a file must share layout and node; "
                "give this process the host's node, or another path"
            )

    def close(self) -> None:
        """Close the file (the shared state stays); a later call reopens it."""
        _forking.adopt()
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def forked(self) -> None:
        """In a child after fork: its own lock and its own open file, since ``flock`` belongs to
        the open file and would otherwise be shared with the parent."""
        self._lock = threading.Lock()
        self._drop()


def _user(uid: int) -> str:
    try:
        return f"user {pwd.getpwuid(uid).pw_name!r} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _read_state(fd: int, path: Path) -> tuple[int, int]:
    """The (generation, last position) of the newest intact slot."""
    data = os.pread(fd, FILE_SIZE, 0)
    if len(data) != FILE_SIZE:
        raise NodeError(
            f"{path} was truncated to {len(data)} bytes while in use (not by idfields), so the "
            "host's last ID is lost and none is issued from it. Remove the file: the next ID "
            "re-creates it, starting max_skew ahead of the clock"
        )
    (gen_a, pos_a, check_a), (gen_b, pos_b, check_b) = (_SLOT.unpack_from(data, o) for o in _SLOTS)
    intact_a = check_a == zlib.crc32(data[_SLOTS[0] : _SLOTS[0] + _PAIR.size])
    intact_b = check_b == zlib.crc32(data[_SLOTS[1] : _SLOTS[1] + _PAIR.size])
    if intact_a and (not intact_b or gen_a > gen_b):
        return gen_a, pos_a
    if intact_b:
        return gen_b, pos_b
    raise NodeError(
        f"both state slots of {path} are damaged (not by a crash: a crash damages at most "
        "one); remove the file: the next ID re-creates it, starting max_skew ahead of the clock"
    )


def _write_state(fd: int, path: Path, generation: int, position: int) -> None:
    """Write into the slot not holding the current state: a cut write leaves that one intact."""
    pair = _PAIR.pack(generation, position)
    try:
        os.pwrite(fd, pair + zlib.crc32(pair).to_bytes(8, "little"), _SLOTS[generation & 1])
    except OSError as error:
        raise NodeError(
            f"could not write {path} ({error}); no ID was issued. Free space in {path.parent} "
            "or pass path= on another file system"
        ) from error
