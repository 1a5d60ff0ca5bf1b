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
returned. After a reboot the file may be gone (``/dev/shm``) or older than the last ID, which is
safe only because the clock has moved past the ``max_skew`` the host may run ahead; the same
assumption Chronicle makes.

Works with any layout with a timestamp and exactly one Node field: ``chronicle`` (readable ns
timestamps whose last two digits are the host) and ``snowflake`` among them.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
import tempfile
import threading
import time
import weakref
import zlib
from collections.abc import Callable
from pathlib import Path

from idfields.errors import ClockMovedBackwards, LayoutExhausted, NodeError, ValueOutOfRange
from idfields.generators.base import check_take_count
from idfields.layouts import Constant, Layout, get_layout
from idfields.nodes import EnvironmentNode, validate_values

MAGIC = b"IDFHOST1"
_HEADER = struct.Struct("<8sQQ")  # magic, layout fingerprint, node
_SLOT = struct.Struct("<QqQ")  # generation, last position (-1: none yet), crc32 of the two
_PAIR = struct.Struct("<Qq")
_BOTH = struct.Struct("<QqQQqQ")
_SLOTS = (_HEADER.size, _HEADER.size + _SLOT.size)
FILE_SIZE = _HEADER.size + 2 * _SLOT.size
DEFAULT_MAX_SKEW_NS = 1_000_000_000

_open_generators: weakref.WeakSet[HostSharedGenerator] = weakref.WeakSet()


def default_path(layout: Layout) -> Path:
    """``/dev/shm`` (memory, emptied at boot) when there is one, else the temp directory."""
    folder = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    return folder / f"idfields-{os.getuid()}-{layout.name}.state"


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
        self._epoch_ns = resolved.epoch_ns
        self._unit_ns = resolved.unit_ns
        self._per_tick = resolved.ids_per_tick
        self._tick_mul = stamp.multiplier
        self._modulus = stamp.radix
        self._max_tick = None if resolved.wraps else stamp.maximum
        self._skew_ticks = max_skew_ns // self._unit_ns
        self._max_wait_ns = max_skew_ns if max_wait_ns is None else max_wait_ns
        sequence = resolved.sequence
        self._step = sequence.multiplier if sequence else 1
        constants = [
            p.spec.value * p.multiplier for p in resolved.placed if isinstance(p.spec, Constant)
        ]
        self._base = (
            self._node * placed.multiplier
            + (sequence.minimum * sequence.multiplier if sequence else 0)
            + sum(constants)
        )
        # Distance between the IDs of consecutive positions when it is the same across ticks
        # (chronicle: one ID per tick; snowflake: the sequence fills the tick's whole range).
        spans = self._per_tick == 1 or self._step * self._per_tick == self._tick_mul
        self._stride = (self._tick_mul if self._per_tick == 1 else self._step) if spans else 0
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._map: mmap.mmap | None = None
        self._open()
        _open_generators.add(self)

    def __repr__(self) -> str:
        return f"<HostSharedGenerator {self.layout.name} node={self._node} path={self.path}>"

    @property
    def node(self) -> dict[str, int]:
        return {self.layout.node_fields[0].name: self._node}

    def __call__(self) -> int:
        with self._lock:
            position = self._reserve(1)[0]
        tick, index = divmod(position, self._per_tick)
        return self._base + (tick % self._modulus) * self._tick_mul + index * self._step

    def next(self) -> int:
        """The next ID (same as calling the generator)."""
        return self()

    def take(self, count: int) -> list[int]:
        """``count`` increasing IDs, reserved under one lock (they may run ahead of the clock up
        to ``max_skew``, in as many rounds as that takes)."""
        count = check_take_count(count)
        ids: list[int] = []
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
            now = (self._clock() - self._epoch_ns) // self._unit_ns
            fd, shared = self._opened()
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                generation, last = _read_state(shared, self.path)
                first = max(now * self._per_tick, last + 1)
                limit = (now + self._skew_ticks + 1) * self._per_tick  # first position too far
                got = min(wanted, limit - first)
                if got > 0:
                    self._check_end((first + got - 1) // self._per_tick)
                    _write_state(shared, generation + 1, first + got - 1)
                    return first, got
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            waited_ns += self._wait(first // self._per_tick - now, waited_ns)

    def _check_end(self, tick: int) -> None:
        if self._max_tick is not None and tick > self._max_tick:
            raise LayoutExhausted(
                f"layout {self.layout.name!r} ran out of timestamps on "
                f"{self.layout.runs_out_text}; no ID was issued. Move to a layout with a later "
                "epoch or a wider timestamp"
            )

    def _wait(self, ahead_ticks: int, waited_ns: int) -> int:
        """Sleep (without the lock) until the clock is back within the skew bound, or raise."""
        wait_ns = max(ahead_ticks - self._skew_ticks, 1) * self._unit_ns
        if waited_ns + wait_ns > self._max_wait_ns:
            raise ClockMovedBackwards(
                f"the clock is {ahead_ticks * self._unit_ns / 1e9:.3f} s behind the last ID of "
                f"{self.path} (layout {self.layout.name!r}, node {self._node}); the host runs "
                f"ahead at most {self._skew_ticks * self._unit_ns / 1e9:.3f} s (max_skew). No ID "
                "was issued: fix the host clock (NTP) or retry once it has caught up"
            )
        self._sleep(wait_ns / 1e9)
        return wait_ns

    def _opened(self) -> tuple[int, mmap.mmap]:
        if self._fd is None or self._map is None:
            self._open()
        if self._fd is None or self._map is None:
            raise NodeError(f"could not open {self.path}")
        return self._fd, self._map

    def _open(self) -> None:
        """Open (creating and initialising under the lock) and map the state file."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                size = os.fstat(fd).st_size
                if size == 0:
                    os.ftruncate(fd, FILE_SIZE)
                    shared = mmap.mmap(fd, FILE_SIZE)
                    _HEADER.pack_into(shared, 0, MAGIC, fingerprint(self.layout), self._node)
                    _write_state(shared, 0, -1)
                else:
                    shared = self._map_existing(fd, size)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._map = fd, shared

    def _map_existing(self, fd: int, size: int) -> mmap.mmap:
        if size != FILE_SIZE:
            raise NodeError(
                f"{self.path} is not an idfields host state file ({size} bytes); pass another path"
            )
        shared = mmap.mmap(fd, FILE_SIZE)
        magic, layout_print, node = _HEADER.unpack_from(shared, 0)
        problem = None
        if magic != MAGIC:
            problem = "is not an idfields host state file"
        elif layout_print != fingerprint(self.layout):
            problem = f"belongs to another layout than {self.layout.name!r}"
        elif node != self._node:
            problem = f"belongs to node {node}, but this process was given node {self._node}"
        if problem is not None:
            shared.close()
            raise NodeError(
                f"{self.path} {problem}: the processes sharing a file must share layout and node; "
                "give this process the host's node, or another path"
            )
        return shared

    def close(self) -> None:
        """Unmap and close the file (the shared state stays); a later call reopens it."""
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        shared, fd = self._map, self._fd
        self._map = self._fd = None
        if shared is not None:
            shared.close()
        if fd is not None:
            os.close(fd)

    def forked(self) -> None:
        """In a child after fork: its own lock and its own open file, since ``flock`` belongs to
        the open file and would otherwise be shared with the parent."""
        self._lock = threading.Lock()
        self._drop()


def _read_state(shared: mmap.mmap, path: Path) -> tuple[int, int]:
    """The (generation, last position) of the newest intact slot."""
    first, second = _SLOTS
    gen_a, pos_a, check_a, gen_b, pos_b, check_b = _BOTH.unpack_from(shared, first)
    intact_a = check_a == zlib.crc32(shared[first : first + _PAIR.size])
    intact_b = check_b == zlib.crc32(shared[second : second + _PAIR.size])
    if intact_a and (not intact_b or gen_a > gen_b):
        return gen_a, pos_a
    if intact_b:
        return gen_b, pos_b
    raise NodeError(
        f"both state slots of {path} are damaged (not by a crash: a crash damages at most "
        "one); remove the file only once the clock has passed the host's last ID"
    )


def _write_state(shared: mmap.mmap, generation: int, position: int) -> None:
    """Write into the slot not holding the current state: a cut write leaves that one intact."""
    offset = _SLOTS[generation & 1]
    pair = _PAIR.pack(generation, position)
    shared[offset : offset + _SLOT.size] = pair + zlib.crc32(pair).to_bytes(8, "little")


def _after_fork_in_child() -> None:
    for generator in list(_open_generators):
        generator.forked()


os.register_at_fork(after_in_child=_after_fork_in_child)
