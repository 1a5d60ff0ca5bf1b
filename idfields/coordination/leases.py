"""Node leases (``idfields_node_lease``): a node no live process holds, for time-based layouts.

A row per (layout, node) says who holds the node and until when (``expires_at_ms``: the holder
issues no timestamp after it). Claiming is a single conditional statement, so of any number of
racing processes exactly one wins a node:

- a node never used is inserted if absent;
- a lapsed row (``expires_at_ms < now``) is taken by a compare-and-set on its old expiry, and
  that old expiry fences the new holder: it issues only timestamps strictly after it, so never
  an ID the previous holder (even one killed mid-write, or on a host whose clock differs)
  could have issued.

Candidates are tried in random order, so many processes starting at once spread over the node
space instead of all racing for node 0. A clean exit releases the row (its expiry drops to what
the holder really issued), so restarts reuse nodes and never exhaust the space; a killed
process's row lapses ``ttl`` after its last renewal.
"""

from __future__ import annotations

import logging
import os
import random
import secrets
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from idfields.coordination.database import Database, check_length, insert_if_absent
from idfields.errors import NodeError
from idfields.layouts import Layout, PlacedField
from idfields.nodes import Assignment

logger = logging.getLogger("idfields.coordination")

_NS_PER_MS = 1_000_000
_PROBES = 32  # random nodes tried before enumerating the whole space


@dataclass(frozen=True)
class LeaseInfo:
    """One row of the lease table, for reports (``manage.py idfields_nodes``)."""

    layout: str
    node: int
    holder: str
    acquired_at: datetime
    expires_at: datetime
    live: bool


class LeaseSource:
    """A :class:`~idfields.nodes.NodeSource` that leases a node from the database.

    ``ttl_s`` bounds how long a killed process keeps its node; the holder renews after a third
    of it. ``holder`` names this process in the table (default ``host:pid``; a random suffix
    tells apart the leases of one process).
    """

    def __init__(
        self,
        database: Database,
        *,
        ttl_s: float = 60.0,
        holder: str | None = None,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        if not 0.003 <= ttl_s <= 86_400:
            raise ValueError(f"lease ttl_s={ttl_s!r} is out of range; give 0.003..86400 seconds")
        self._database = database
        self._ttl_ms = round(ttl_s * 1000)
        self._holder = holder
        self._clock = clock

    def __repr__(self) -> str:
        return f"LeaseSource(ttl_s={self._ttl_ms / 1000})"

    def acquire(self, layout: Layout) -> Assignment:
        placed = _lease_field(layout)
        name = check_length("layout name", layout.name, 64)
        holder = self._holder_name()
        for _ in range(2):  # a second look when every candidate was taken under our feet
            now = self._now_ms()
            rows = self._database.execute(
                "SELECT node, expires_at_ms FROM idfields_node_lease WHERE layout = %s", [name]
            ).rows
            expiries = {int(node): int(expires) for node, expires in rows}
            for node in _candidates(placed, expiries, now):
                lease = self._claim(name, node, expiries.get(node), holder, now)
                if lease is not None:
                    return lease.assignment(placed.name)
        live = sum(1 for expires in expiries.values() if expires >= now)
        raise NodeError(
            f"no free node for layout {name!r}: {live} of its {placed.size} nodes "
            f"({placed.minimum}..{placed.maximum}) are leased by live processes. Run fewer "
            f"processes per layout, wait up to {self._ttl_ms / 1000:g} s for the leases of dead "
            "ones to lapse, or use a layout with a wider node field; the lease table "
            "(manage.py idfields_nodes, or list_leases()) shows the holders"
        )

    def _claim(
        self, layout: str, node: int, old_expiry: int | None, holder: str, now: int
    ) -> _Lease | None:
        expires = now + self._ttl_ms
        if old_expiry is None:
            won = insert_if_absent(
                self._database,
                "idfields_node_lease",
                ("layout", "node", "holder", "acquired_at_ms", "expires_at_ms"),
                (layout, node, holder, now, expires),
            )
        else:
            won = (
                self._database.execute(
                    "UPDATE idfields_node_lease SET holder = %s, acquired_at_ms = %s, "
                    "expires_at_ms = %s WHERE layout = %s AND node = %s AND expires_at_ms = %s",
                    [holder, now, expires, layout, node, old_expiry],
                ).rowcount
                == 1
            )
        if not won:
            return None
        return _Lease(self, layout, node, holder, now, expires, fence_ms=old_expiry or 0)

    def _holder_name(self) -> str:
        base = self._holder or f"{socket.gethostname()[:200]}:{os.getpid()}"
        return check_length("lease holder", f"{base}:{secrets.token_hex(4)}", 255)

    def _now_ms(self) -> int:
        return self._clock() // _NS_PER_MS


class _Lease:
    """A held row: renews it while it is ours, releases it with what was really issued."""

    def __init__(
        self,
        source: LeaseSource,
        layout: str,
        node: int,
        holder: str,
        now: int,
        expires: int,
        fence_ms: int,
    ) -> None:
        self._source = source
        self._layout = layout
        self._node = node
        self._holder = holder
        self._expires = expires
        self._renewed = now
        self._fence_ms = fence_ms

    def assignment(self, field: str) -> Assignment:
        return Assignment(
            {field: self._node},
            not_before_ns=self._fence_ms * _NS_PER_MS,
            valid_until_ns=self._expires * _NS_PER_MS,
            renew_after_ns=self._renew_after_ns(),
            renew=self.renew,
            release=self.release,
        )

    def _renew_after_ns(self) -> int:
        return (self._renewed + self._source._ttl_ms // 3) * _NS_PER_MS

    def renew(self) -> tuple[int, int]:
        """Extend the lease; NodeError if another process took it meanwhile."""
        now = self._source._now_ms()
        # Never shorten the promise: a clock that stepped back must not free timestamps we used.
        expires = max(self._expires, now + self._source._ttl_ms)
        matched = self._source._database.execute(
            "UPDATE idfields_node_lease SET expires_at_ms = %s "
            "WHERE layout = %s AND node = %s AND holder = %s",
            [expires, self._layout, self._node, self._holder],
        ).rowcount
        if matched != 1:
            raise NodeError(
                f"lease lost: node {self._node} of layout {self._layout!r} lapsed "
                f"(at {self._expires} ms) and another process holds it now; this generator "
                "takes another node. Renewals failed for longer than the lease ttl: check the "
                "database connection"
            )
        self._expires, self._renewed = expires, now
        return self._renew_after_ns(), expires * _NS_PER_MS

    def release(self, issued_until_ns: int) -> None:
        """Free the node; its next holder is fenced after what this holder really issued."""
        until = max(-(-issued_until_ns // _NS_PER_MS), self._source._now_ms())
        try:
            self._source._database.execute(
                "UPDATE idfields_node_lease SET holder = %s, expires_at_ms = %s "
                "WHERE layout = %s AND node = %s AND holder = %s",
                ["", min(until, self._expires), self._layout, self._node, self._holder],
            )
        except Exception:  # the lease lapses after its ttl anyway; other leases still release
            logger.warning(
                "could not release node %s of layout %r; it lapses at its expiry",
                self._node,
                self._layout,
                exc_info=True,
            )


def list_leases(
    database: Database, layout: str | None = None, *, now_ns: int | None = None
) -> list[LeaseInfo]:
    """Who holds which node, since and until when (released and lapsed rows are not live)."""
    sql = "SELECT layout, node, holder, acquired_at_ms, expires_at_ms FROM idfields_node_lease"
    params: list[object] = []
    if layout is not None:
        sql += " WHERE layout = %s"
        params.append(layout)
    now = (time.time_ns() if now_ns is None else now_ns) // _NS_PER_MS
    rows = database.execute(sql + " ORDER BY layout, node", params).rows
    return [
        LeaseInfo(
            str(name),
            int(node),
            str(holder),
            _datetime(int(acquired)),
            _datetime(int(expires)),
            live=bool(holder) and int(expires) >= now,
        )
        for name, node, holder, acquired, expires in rows
    ]


def _datetime(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _lease_field(layout: Layout) -> PlacedField:
    """The one Node field a lease fills; only time-based layouts can fence a reused node."""
    if layout.timestamp is None:
        raise NodeError(
            f"layout {layout.name!r} has no timestamp, so a reused node would repeat its IDs; "
            "leases serve time-based layouts only. Use DecimalSource (generator_id + launch_id) "
            "or a static node per process"
        )
    if len(layout.node_fields) != 1:
        names = ", ".join(p.name for p in layout.node_fields) or "none"
        raise NodeError(
            f"a lease fills exactly one Node field, but layout {layout.name!r} has: {names}; "
            "give the layout one Node field, or use a static source naming each field"
        )
    return layout.node_fields[0]


def _candidates(placed: PlacedField, expiries: Mapping[int, int], now: int) -> Iterator[int]:
    """Free nodes in random order: a few random probes first, then all the others."""

    def free(node: int) -> bool:
        expires = expiries.get(node)
        return expires is None or expires < now

    nodes = range(placed.minimum, placed.maximum + 1)
    probes = random.sample(nodes, min(_PROBES, len(nodes)))
    yield from (node for node in probes if free(node))
    if len(nodes) > _PROBES:
        tried = set(probes)
        rest = [node for node in nodes if node not in tried and free(node)]
        random.shuffle(rest)
        yield from rest
