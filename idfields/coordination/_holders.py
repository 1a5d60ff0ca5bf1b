"""Who a lease holder is, and whether this process can prove it will never issue again.

An app holder names itself ``host:pid:place:start:token``:

- ``place`` is where its pid means something: ``<boot>-<pid ns>-<time ns>``, this boot of the
  kernel (``/proc/sys/kernel/random/boot_id``) and the inode ids of ``/proc/self/ns/pid`` and
  ``/proc/self/ns/time``. Containers on one kernel share the boot id and often the host name
  (``hostNetwork``, ``--uts=host``, an equal ``--hostname``) but each numbers its processes in a
  PID namespace of its own, and ``/proc/<pid>/stat`` start times are shifted by the reader's
  time namespace: a pid and a start time mean the same process only to a reader in the very
  same place. Empty when this process cannot tell (no ``/proc``, or a ``/proc`` of another PID
  namespace): then nobody can ever prove it dead, and its lease simply lapses.
- ``start`` is its start time in clock ticks since boot, read in its own time namespace.
- ``token`` is 64 random bits drawn for every claim: the holder string names one claim, so the
  claim's compare-and-set can match it (invariant L2 of docs/explanation/lease-protocol.md).

Database backends name themselves ``pg:<pid>:<backend start ms>``, the start empty where the
backend's current role may not read it.

:meth:`Holder.provably_dead` is invariant L3: a holder is dead only when it is an app process of
this host, boot, PID namespace and time namespace, and its pid is gone (``kill(pid, 0)`` says no
such process) or names a process whose readable ``/proc`` entry shows another start time.
Anything foreign, unreadable or unsure is alive.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
from dataclasses import dataclass
from functools import cache

_BOOT_ID = "/proc/sys/kernel/random/boot_id"
# A database backend's holder, exactly: pg:<pid>:<backend start ms>. An app process on a host
# named "pg" writes five fields and stays an app holder.
_DATABASE_HOLDER = re.compile(r"pg:([0-9]+):[0-9]*")


@dataclass(frozen=True)
class Holder:
    """A parsed holder string; ``kind`` is ``app``, ``database`` or ``released``."""

    kind: str
    host: str
    pid: int | None
    place: str = ""
    start: str = ""

    def provably_dead(self) -> bool:
        """True only when this process can prove the holding app process no longer runs."""
        if self.kind != "app" or not self.pid or not self.start or not self.place:
            return False
        if self.place != place() or self.host != _host():
            return False
        return not _may_run(self.pid, self.start)


def parse(holder: str) -> Holder:
    """Read any holder string the app or the database functions write."""
    if not holder:
        return Holder("released", "", None)
    if backend := _DATABASE_HOLDER.fullmatch(holder):
        return Holder("database", "database backend", int(backend[1]))
    parts = holder.split(":")
    if len(parts) >= 5:
        host, pid, where, start = ":".join(parts[:-4]), parts[-4], parts[-3], parts[-2]
        return Holder("app", host, _int(pid), where, start)
    if len(parts) >= 3:
        return Holder("app", ":".join(parts[:-2]), _int(parts[-2]))
    return Holder("app", holder, None)


def this_process(name: str | None = None) -> str:
    """A new holder string for one claim of this process (``name``, if given, stands for the
    host: such a holder is never proven dead by a process of the real host name)."""
    here = place()
    start = process_start("self") if here else ""
    return f"{name or _host()}:{os.getpid()}:{here}:{start}:{secrets.token_hex(8)}"


def place() -> str:
    """``<boot>-<pid ns>-<time ns>`` of this process, or "" when it cannot be read in full.

    Read afresh on every call: a child forked after ``unshare(CLONE_NEWPID)`` lives in another
    PID namespace than the process that imported this module.
    """
    boot = boot_id()
    try:
        if os.readlink("/proc/self") != str(os.getpid()):
            return ""  # a /proc of another PID namespace: its pids are not ours
        pid_ns = _namespace("pid")
    except OSError:
        return ""
    try:
        time_ns = _namespace("time")
    except FileNotFoundError:
        time_ns = "none"  # a kernel without time namespaces: every process shares its clocks
    except OSError:
        return ""
    return f"{boot}-{pid_ns}-{time_ns}" if boot else ""


@cache
def boot_id() -> str:
    """This boot of the kernel (8 hex digits), or "" where /proc does not say."""
    try:
        with open(_BOOT_ID) as file:
            return file.read().strip().replace("-", "")[:8]
    except OSError:
        return ""


def process_start(pid: int | str) -> str:
    """The start time of process ``pid`` (or ``"self"``) in clock ticks since boot, as this
    process's time namespace shows it, or "" when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            stat = file.read()
    except OSError:
        return ""
    fields = stat.rpartition(")")[2].split()  # the name before ")" may hold spaces
    return fields[19] if len(fields) > 19 else ""  # field 22


def _may_run(pid: int, start: str) -> bool:
    """Whether ``pid`` (of this PID namespace) may still be the process started at ``start``."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False  # no such process in this namespace: it can never issue again
    except OSError:
        pass  # it exists but is not ours to signal: read on
    found = process_start(pid)
    return not found or found == start  # unreadable (hidepid, another user): alive


def _namespace(kind: str) -> str:
    link = os.readlink(f"/proc/self/ns/{kind}")  # "pid:[4026531836]"
    return link.partition("[")[2].rstrip("]") or link


@cache
def _host() -> str:
    return socket.gethostname()[:180]


def _int(text: str) -> int | None:
    return int(text) if text.isdigit() else None
