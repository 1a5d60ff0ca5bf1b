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

Crash loops: when no node is free, a row whose holder this host can prove dead (same host and
boot, its pid gone or reused; see ``holders``) is reclaimed at once instead of after the ttl. The
dead holder issued nothing after its death, and every leased generator runs at most
``LEASE_MAX_SKEW_MS`` ahead of its clock (the assignment caps it), so the new holder is fenced
at ``min(expiry, now + LEASE_MAX_SKEW_MS)``: on the same host's clock, later than any ID the
dead one could have issued. That needs the clock not to have stepped back since the dead
holder's last ID, so only rows whose claim and last renewal are not in our future are reclaimed
(processes of one host share the ttl setting, which dates the renewal).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from idfields.coordination import holders
from idfields.coordination.database import Database, check_length, insert_if_absent
from idfields.errors import NodeError
from idfields.layouts import Layout, PlacedField
from idfields.metrics import emit
from idfields.nodes import Assignment

logger = logging.getLogger("idfields.coordination")

_NS_PER_MS = 1_000_000
_PROBES = 32  # random nodes tried before enumerating the whole space
LEASE_MAX_SKEW_MS = 1000  # run-ahead cap of leased generators (and of the SQL functions)
DATABASE_LEASE_MS = 2000  # the SQL functions' lease: a backend renews to now + this


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
        started = time.perf_counter()
        try:
            lease = self._first_claim(placed, name, holder)
        except NodeError:
            raise
        except Exception:
            emit("lease.failed", layout=name)
            raise
        emit(
            "lease.claimed",
            time.perf_counter() - started,
            layout=name,
            node=str(lease.node),
            reclaimed=str(lease.reclaimed).lower(),
        )
        return lease.assignment(placed.name)

    def _first_claim(self, placed: PlacedField, name: str, holder: str) -> _Lease:
        """A free node if any, else a node whose holder is provably dead, else NodeError."""
        for _ in range(2):  # a second look when every candidate was taken under our feet
            now = self._now_ms()
            rows = self._database.execute(
                "SELECT node, expires_at_ms, holder, acquired_at_ms FROM idfields_node_lease "
                "WHERE layout = %s",
                [name],
            ).rows
            expiries = {int(node): int(expires) for node, expires, _, _ in rows}
            for node in _candidates(placed, expiries, now):
                lease = self._claim(name, node, expiries.get(node), holder, now)
                if lease is not None:
                    return lease
            lease = self._reclaim(name, rows, holder, now)
            if lease is not None:
                return lease
        live = sum(1 for expires in expiries.values() if expires >= now)
        raise NodeError(
            f"no free node for layout {name!r}: {live} of its {placed.size} nodes "
            f"({placed.minimum}..{placed.maximum}) are leased by live processes. Run fewer "
            f"processes per layout, wait up to {self._ttl_ms / 1000:g} s for the leases of dead "
            "ones to lapse, or use a layout with a wider node field; the lease table "
            "(manage.py idfields_nodes, or list_leases()) shows the holders"
        )

    def _reclaim(
        self, name: str, rows: list[tuple[Any, ...]], holder: str, now: int
    ) -> _Lease | None:
        """Take a node whose holder is provably dead, fenced after anything it could have issued.

        App holders: dead on this host (same boot, pid gone or reused), judged on our clock.
        Database backends: their pid gone from ``pg_stat_activity``, judged on the server's
        clock, which is the one they issued on.
        """
        backends = _backends(self._database, rows)
        for node, expires, held_by, acquired in rows:
            who = holders.parse(str(held_by))
            if who.kind == "database" and backends is not None:
                live_pids, clock = backends
                dead, renewed = who.pid not in live_pids, int(expires) - DATABASE_LEASE_MS
            else:
                dead, clock = who.is_dead_here(), now
                renewed = int(expires) - self._ttl_ms  # its last renewal, if it shared our ttl
            if dead and max(int(acquired), renewed) <= clock:
                fence = min(int(expires), clock + LEASE_MAX_SKEW_MS)
                lease = self._claim(name, int(node), int(expires), holder, now, fence)
                if lease is not None:
                    return lease
        return None

    def _claim(
        self,
        layout: str,
        node: int,
        old_expiry: int | None,
        holder: str,
        now: int,
        fence: int | None = None,
    ) -> _Lease | None:
        """Take ``node`` if its row still has ``old_expiry``; fenced at ``fence`` (default: that
        expiry, the latest time its previous holder may have issued)."""
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
        if fence is None:
            fence = old_expiry or 0
        return _Lease(
            self, layout, node, holder, now, expires, fence, reclaimed=fence != (old_expiry or 0)
        )

    def _holder_name(self) -> str:
        return check_length("lease holder", holders.this_process(self._holder), 255)

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
        reclaimed: bool,
    ) -> None:
        self.node = node
        self.reclaimed = reclaimed
        self._source = source
        self._layout = layout
        self._holder = holder
        self._expires = expires
        self._renewed = now
        self._fence_ms = fence_ms

    def assignment(self, field: str) -> Assignment:
        return Assignment(
            {field: self.node},
            not_before_ns=self._fence_ms * _NS_PER_MS,
            valid_until_ns=self._expires * _NS_PER_MS,
            renew_after_ns=self._renew_after_ns(),
            renew=self.renew,
            release=self.release,
            max_skew_ns=LEASE_MAX_SKEW_MS * _NS_PER_MS,
        )

    def _renew_after_ns(self) -> int:
        return (self._renewed + self._source._ttl_ms // 3) * _NS_PER_MS

    def renew(self) -> tuple[int, int]:
        """Extend the lease; NodeError if another process took it meanwhile."""
        now = self._source._now_ms()
        started = time.perf_counter()
        # Never shorten the promise: a clock that stepped back must not free timestamps we used.
        expires = max(self._expires, now + self._source._ttl_ms)
        try:
            matched = self._source._database.execute(
                "UPDATE idfields_node_lease SET expires_at_ms = %s "
                "WHERE layout = %s AND node = %s AND holder = %s",
                [expires, self._layout, self.node, self._holder],
            ).rowcount
        except Exception:
            emit("lease.failed", layout=self._layout)
            raise
        if matched != 1:
            emit("lease.lost", layout=self._layout, node=str(self.node))
            raise NodeError(
                f"lease lost: node {self.node} of layout {self._layout!r} lapsed "
                f"(at {self._expires} ms) and another process holds it now; this generator "
                "takes another node. Renewals failed for longer than the lease ttl: check the "
                "database connection"
            )
        self._expires, self._renewed = expires, now
        emit(
            "lease.renewed",
            time.perf_counter() - started,
            layout=self._layout,
            node=str(self.node),
        )
        return self._renew_after_ns(), expires * _NS_PER_MS

    def release(self, issued_until_ns: int) -> None:
        """Free the node; its next holder is fenced after what this holder really issued."""
        until = max(-(-issued_until_ns // _NS_PER_MS), self._source._now_ms())
        try:
            self._source._database.execute(
                "UPDATE idfields_node_lease SET holder = %s, expires_at_ms = %s "
                "WHERE layout = %s AND node = %s AND holder = %s",
                ["", min(until, self._expires), self._layout, self.node, self._holder],
            )
        except Exception:  # the lease lapses after its ttl anyway; other leases still release
            logger.warning(
                "could not release node %s of layout %r; it lapses at its expiry",
                self.node,
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


def _backends(database: Database, rows: list[tuple[Any, ...]]) -> tuple[set[int], int] | None:
    """PostgreSQL's live backend pids and its clock (ms), when a database backend holds a row."""
    if database.vendor != "postgresql" or not any(
        holders.parse(str(row[2])).kind == "database" for row in rows
    ):
        return None
    found = database.execute(
        "SELECT pid, (extract(epoch FROM clock_timestamp()) * 1000)::bigint FROM pg_stat_activity"
    ).rows
    return {int(pid) for pid, _ in found}, max(int(clock) for _, clock in found)


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
