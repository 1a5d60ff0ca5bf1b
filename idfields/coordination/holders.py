"""Who a lease holder is, and whether this host can prove it dead.

An app holder names itself ``host:pid:boot:start:token``: the host, the process id, this boot of
the kernel (``/proc/sys/kernel/random/boot_id``), the process's start time in clock ticks since
boot (``/proc/<pid>/stat``) and a random token. Another process on the same host and boot can
then tell for certain that the holder is gone: its pid is absent, or belongs to a process started
at another time. That is what lets a crash-looping worker take back the node its dead
predecessor held instead of waiting out the lease (see ``leases``). Database backends name
themselves ``pg:<pid>:<backend start ms>``; older app holders ``host:pid:token``.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from functools import cache

_BOOT_ID = "/proc/sys/kernel/random/boot_id"
DATABASE_PREFIX = "pg:"  # a database backend's holder: pg:<pid>:<backend start ms>


@dataclass(frozen=True)
class Holder:
    """A parsed holder string; ``kind`` is ``app``, ``database`` or ``released``."""

    kind: str
    host: str
    pid: int | None
    boot: str = ""
    start: str = ""

    def is_dead_here(self) -> bool:
        """True only when this host can prove the holding process no longer runs."""
        if self.kind != "app" or not self.boot or self.pid is None:
            return False
        if self.host != _host() or self.boot != boot_id():
            return False
        return process_start(self.pid) != self.start


def parse(holder: str) -> Holder:
    """Read any holder string the app or the database functions write."""
    if not holder:
        return Holder("released", "", None)
    parts = holder.split(":")
    if holder.startswith(DATABASE_PREFIX):
        return Holder("database", "database backend", _int(parts[1]))
    if len(parts) >= 5:
        host, pid, boot, start = ":".join(parts[:-4]), parts[-4], parts[-3], parts[-2]
        return Holder("app", host, _int(pid), boot, start)
    if len(parts) >= 3:
        return Holder("app", ":".join(parts[:-2]), _int(parts[-2]))
    return Holder("app", holder, None)


def this_process(name: str | None = None) -> str:
    """A new holder string for this process (``name``, if given, stands for the host)."""
    pid = os.getpid()
    return f"{name or _host()}:{pid}:{boot_id()}:{process_start(pid)}:{secrets.token_hex(4)}"


@cache
def boot_id() -> str:
    """This boot of the kernel (8 hex digits), or "" where /proc does not say."""
    try:
        with open(_BOOT_ID) as file:
            return file.read().strip().replace("-", "")[:8]
    except OSError:
        return ""


def process_start(pid: int) -> str:
    """The start time of process ``pid`` in clock ticks since boot, or "" if there is none."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            stat = file.read()
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[19]  # field 22; the name before ")" may hold spaces


@cache
def _host() -> str:
    return socket.gethostname()[:180]


def _int(text: str) -> int | None:
    return int(text) if text.isdigit() else None
