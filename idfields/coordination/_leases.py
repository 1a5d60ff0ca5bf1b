"""Node leases (``idfields_node_lease``): a node no live process holds, for time-based layouts.

The rules are the numbered invariants of docs/explanation/lease-protocol.md; each is named where
it is kept. A row per (layout, node) says who holds the node (``holder``, a string naming one
claim) and the last time it may issue (``expires_at_ms``, on the holder's own clock).

- L1: a holder issues only timestamps after its fence and never after its recorded expiry: it
  renews (a third of the ttl in) before it goes on, and stops where a renewal found the row no
  longer its own.
- L2: a claim is one compare-and-set on the row as read, holder string included. Every claim
  writes a holder string with 64 fresh random bits, so a row that went from A to B and back
  to A's expiry is never mistaken for the one read: of any number of racers, one wins.
- L3: a row whose expiry is not yet past is taken only when its holder provably cannot issue
  again (``_holders.Holder.provably_dead``, a PostgreSQL backend gone from the server); anything
  unreadable or foreign is alive.
- L4: the new holder is fenced at the old row's expiry, the holder's own promise, never at a
  time read from the claimer's clock. The claimer's clock only decides when a claim is worth
  trying (a lapsed row; a dead or released one whose fence is within the run-ahead of a
  generator), never what the new holder may issue.

Candidates are tried in random order, so many processes starting at once spread over the node
space instead of all racing for node 0. A clean exit releases the row (its expiry drops to what
the holder really issued), so restarts reuse nodes and never exhaust the space; a killed
process's row lapses ``ttl`` after its last renewal, or, proven dead, a second before that.

Rows are keyed by the layout's identity (:attr:`Layout.lease_key`: the bare name of a built-in,
``name#<fingerprint>`` of a user layout), not its name. A layout changed under its old name
during a rolling deploy (Node 8 / Sequence 14 to Node 10 / Sequence 12) packs its fields
differently, so no choice of distinct node numbers keeps the two apart: while live processes
hold a node of the same name under another key, the claim is refused, naming the fix. The check
runs after the claim as well, so of two processes of different layouts starting at once at
least one sees the other and gives its node back.

Database backends (the SQL functions) lease from the same table and also hold a session
advisory lock on each node they claim (class :func:`lease_lock_key`). They keep it while an ID
they issued may outlive its lease row: a claim made inside a savepoint that rolled back leaves
the row lapsed, and the ID can be kept. On PostgreSQL a claim therefore takes that lock too, for
its own transaction, and skips a node a backend holds.

On PostgreSQL every claim stays inside the database's node range (``idfields.node_range()``,
set when the SQL functions are installed; every node when they are not), and starts after its
fence: databases given disjoint ranges never issue the same ID. It also starts at the node's
durable fence at the earliest (a sequence ``idfields.fence_<n>``): what a backend issued past a
lease row that a rollback took back (D7 of docs/explanation/lease-protocol-database.md).

A database error backs the source off (0.1 s, doubling up to 10 s) before its next attempt, so
a generator that lost its lease during an outage retries instead of hammering the database or
giving up.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from idfields._events import emit
from idfields.coordination import _holders
from idfields.coordination._database import (
    Database,
    check_length,
    durable,
    insert_if_absent,
    text,
)
from idfields.coordination._identity import may_renew, settled
from idfields.errors import InvalidArgument, NodeError
from idfields.layouts import Layout, PlacedField
from idfields.nodes import Assignment
from idfields.sql import noderange
from idfields.sql.fences import fence_sequence, lease_lock_key

logger = logging.getLogger("idfields.coordination")

_NS_PER_MS = 1_000_000
_PROBES = 32  # random nodes tried before enumerating the whole space
# A claim is worth making only when its fence is at most this far ahead of our clock: a
# generator runs that far ahead (its default max_skew) rather than waiting for the clock.
CLAIM_AHEAD_MS = 1000
_FIRST_BACKOFF_MS = 100
_MAX_BACKOFF_MS = 10_000


@dataclass(frozen=True)
class LeaseInfo:
    """One row of the lease table, for reports (``manage.py idfields_nodes``)."""

    layout: str
    node: int
    holder: str
    acquired_at: datetime
    expires_at: datetime
    live: bool
    backend_gone: bool = False  # held by a PostgreSQL backend no longer in pg_stat_activity


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
            raise InvalidArgument(
                f"lease ttl_s={ttl_s!r} is out of range; give 0.003..86400 seconds"
            )
        self._database = database
        self._ttl_ms = round(ttl_s * 1000)
        self._holder = holder
        self._clock = clock
        self._backoff = _Backoff()

    def __repr__(self) -> str:
        return f"LeaseSource(ttl_s={self._ttl_ms / 1000})"

    def acquire(self, layout: Layout) -> Assignment:
        placed = _lease_field(layout)
        self._backoff.check(self._now_ms())
        started = time.perf_counter()
        try:
            lease = self._acquire(layout, placed)
        except NodeError:  # the node space, not the database: nothing to back off from
            raise
        except Exception as error:
            emit("lease.failed", layout=layout.lease_key)
            self._backoff.failed(self._now_ms(), error)
            raise
        self._backoff.succeeded()
        emit(
            "lease.claimed",
            time.perf_counter() - started,
            layout=lease.layout,
            node=str(lease.node),
            reclaimed=str(lease.reclaimed).lower(),
        )
        return lease.assignment(placed.name)

    def _acquire(self, layout: Layout, placed: PlacedField) -> _Lease:
        key = check_length("layout lease key", layout.lease_key, 64)
        holder = self._holder_name()
        limits = read_node_range(self._database)
        _check_one_lease_table(self._database)
        changed_until = settled(self._database, self._ttl_ms)
        nodes = limits.nodes(placed.minimum, placed.maximum)
        if not nodes:
            raise NodeError(
                f"layout {layout.name!r} has no node in this database's {limits} (its nodes are "
                f"{placed.minimum}..{placed.maximum}); install the SQL functions with a range "
                "that holds some of them (InstallIdFunctions(..., nodes=...))"
            )
        for _ in range(2):  # a second look when every candidate was taken under our feet
            now = self._now_ms()
            rows, fence = self._own_rows(layout, key, now)
            rows = [row for row in rows if row.node in nodes]
            fence = max(fence, limits.fenced_until_ms, changed_until)
            by_node = {row.node: row for row in rows}
            for node in _candidates(nodes, by_node, now):
                lease = self._claim(key, node, by_node.get(node), holder, now, fence)
                if lease is not None:
                    self._check_no_other_layout(layout, key, lease)
                    return self._in_range(lease, placed)
            lease = self._reclaim(key, rows, holder, now, fence)
            if lease is not None:
                self._check_no_other_layout(layout, key, lease)
                return self._in_range(lease, placed)
        live = sum(1 for row in rows if row.holder and row.expires >= now)
        raise NodeError(
            f"no free node for layout {layout.name!r}: {live} of its {len(nodes)} nodes "
            f"({nodes.start}..{nodes.stop - 1}) are leased by live processes. Run fewer "
            f"processes per layout, wait up to {self._ttl_ms / 1000:g} s for the leases of dead "
            "ones to lapse, or use a layout with a wider node field; the lease table "
            "(manage.py idfields_nodes, or list_leases()) shows the holders"
        )

    def _own_rows(
        self, layout: Layout, key: str, now: int, *, others_only: bool = False
    ) -> tuple[list[_Row], int]:
        """The node rows of ``key``, and the fence of every other layout of the same name (the
        last time any of them may have issued); refuses while one is live (L7). ``others_only``
        reads the other layouts' rows alone (a claim's own key may hold every node)."""
        own: list[_Row] = []
        fence = 0
        for row in self._same_name_rows(layout, key if others_only else None):
            if row.key == key:
                own.append(row)
            elif row.holder and row.expires >= now:
                raise self._other_layout(layout, row.key, row.node)
            else:
                fence = max(fence, row.expires)
        return own, fence

    def _reclaim(
        self, key: str, rows: list[_Row], holder: str, now: int, fence: int
    ) -> _Lease | None:
        """Take a node before its lease ends, when its holder provably cannot issue again (L3):
        an app process judged dead in this very place (``holders``), or a PostgreSQL backend
        gone from ``pg_stat_activity``. Fenced at the dead holder's own expiry (L4), so only
        rows whose expiry is within :data:`CLAIM_AHEAD_MS` of our clock are worth the claim."""
        soon = [row for row in rows if now <= row.expires <= now + CLAIM_AHEAD_MS and row.holder]
        if not soon:
            return None
        backends = _live_backends(self._database, [row.holder for row in soon])
        for row in sorted(soon, key=lambda row: row.expires):
            who = _holders.parse(row.holder)
            if _backend_gone(who, backends) or who.provably_dead():
                lease = self._claim(key, row.node, row, holder, now, fence)
                if lease is not None:
                    return lease
        return None

    def _check_no_other_layout(self, layout: Layout, key: str, lease: _Lease) -> None:
        """After a claim: a process of another layout of this name that claimed at the same
        time is seen now (its claim committed before our check, or ours before its check)."""
        try:
            self._own_rows(layout, key, self._now_ms(), others_only=True)
        except NodeError:
            lease.release(0)
            raise

    def _in_range(self, lease: _Lease, placed: PlacedField) -> _Lease:
        """After a claim: a range narrowed meanwhile (a migration that committed while the
        claim was written) is seen now, and a node left outside it is given back."""
        if lease.node in read_node_range(self._database).nodes(placed.minimum, placed.maximum):
            return lease
        lease.release(0)
        raise NodeError(
            f"node {lease.node} of layout {lease.layout!r} left this database's node range "
            "while it was claimed (a migration changed it); no ID was issued, the next attempt "
            "claims inside the new range"
        )

    def _same_name_rows(self, layout: Layout, except_key: str | None = None) -> list[_Row]:
        """Lease rows of every layout named like ``layout`` (bare name or ``name#...``), but
        those of ``except_key``."""
        bare = layout.lease_key.partition("#")[0]
        where, params = _named(bare)
        if except_key is not None:
            where, params = f"({where}) AND layout <> %s", [*params, except_key]
        rows = self._database.execute(
            "SELECT layout, node, holder, acquired_at_ms, expires_at_ms "  # noqa: S608
            f"FROM idfields_node_lease WHERE {where}",
            params,
        ).rows
        return [
            _Row(text(key), int(node), text(holder), int(acquired), int(expires))
            for key, node, holder, acquired, expires in rows
            if _is_named(text(key), bare)
        ]

    def _other_layout(self, layout: Layout, key: str, node: int) -> NodeError:
        return NodeError(
            f"layout {layout.name!r} (lease key {layout.lease_key!r}) differs from the layout "
            f"of that name that live processes use (lease key {key!r}, node {node}): IDs of "
            "two layouts packed differently would overlap. Keep the old layout until every "
            "process using it has stopped (leases end at exit, or lapse within "
            f"{self._ttl_ms / 1000:g} s of a crash), then start the new one; manage.py "
            "idfields_nodes (or list_leases()) shows the holders"
        )

    def _claim(
        self, layout: str, node: int, old: _Row | None, holder: str, now: int, fence: int
    ) -> _Lease | None:
        """Take ``node`` if its row is still ``old`` as read (L2: ``holder`` names one claim, so
        no later write can look like it); the new holder is fenced after the old row's expiry,
        ``fence`` (L4) and the node's durable fence, which covers what a backend issued past a
        lease row that a rollback took back. A node whose durable fence is further ahead than
        a generator's run-ahead is left (L5)."""
        expires = now + self._ttl_ms
        try:
            with self._no_backend_on(layout, node) as durable_fence:
                if durable_fence is None:
                    return None
                won = self._write_claim(layout, node, old, holder, now, expires)
                # Read once the row is ours: a backend's renewal this write waited for raised
                # the fence over the IDs it handed out before it rolled back.
                durable_ms = durable_fence() if won else 0
                if durable_ms > now + CLAIM_AHEAD_MS:
                    raise _FencedAhead
        except _FencedAhead:  # the claim is rolled back: the node is left (L5)
            return None
        if not won:
            return None
        old_expiry = 0 if old is None else old.expires
        reclaimed = old is not None and old.holder != "" and old.expires >= now
        fence = max(old_expiry, fence, durable_ms)
        return _Lease(self, layout, node, holder, now, expires, fence, reclaimed)

    def _write_claim(
        self, layout: str, node: int, old: _Row | None, holder: str, now: int, expires: int
    ) -> bool:
        """The claim's one write: insert a never-used row, or update ``old`` as read (L2)."""
        if old is None:
            return insert_if_absent(
                self._database,
                "idfields_node_lease",
                ("layout", "node", "holder", "acquired_at_ms", "expires_at_ms"),
                (layout, node, holder, now, expires),
            )
        return (
            self._database.execute(
                "UPDATE idfields_node_lease SET holder = %s, acquired_at_ms = %s, "
                "expires_at_ms = %s WHERE layout = %s AND node = %s AND holder = %s "
                "AND acquired_at_ms = %s AND expires_at_ms = %s",
                [holder, now, expires, layout, node, old.holder, old.acquired, old.expires],
            ).rowcount
            == 1
        )

    @contextmanager
    def _no_backend_on(self, layout: str, node: int) -> Iterator[Callable[[], int] | None]:
        """None when a database backend holds ``node``; else a reader of the node's durable
        fence (unix ms, 0 for none). On PostgreSQL a transaction around the claim holds the
        node's advisory lock, so no backend claims it meanwhile (L8); every fence a backend
        wrote for it is in place once the lock and the claimed row are ours (D7 of
        lease-protocol-database.md): read it after the claim's write, never before a wait."""
        if self._database.vendor != "postgresql":
            yield lambda: 0
            return
        with durable(self._database):
            locked, readable = self._database.execute(
                "SELECT pg_try_advisory_xact_lock(CAST(%s AS integer), CAST(%s AS integer)), "
                "(SELECT pg_catalog.has_schema_privilege(n.oid, 'USAGE') "
                "AND pg_catalog.has_sequence_privilege(c.oid, 'SELECT') "
                "FROM pg_catalog.pg_class AS c "
                "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'idfields' AND c.relname = %s)",
                [lease_lock_key(layout), node, fence_sequence(layout, node)],
            ).rows[0]
            if not locked:
                yield None
            elif readable is None:  # the database functions are not installed
                yield lambda: 0
            elif not readable:
                raise NodeError(
                    "this role may not read the nodes' durable fences (what database backends "
                    "issued past a lease row that a rollback took back), so it cannot claim a "
                    "node safely: GRANT USAGE ON SCHEMA idfields TO the application's role"
                )
            else:
                yield lambda: self._durable_fence(layout, node)

    def _durable_fence(self, layout: str, node: int) -> int:
        rows = self._database.execute(
            "SELECT COALESCE(pg_catalog.pg_sequence_last_value(CAST(%s AS regclass)), 0)",
            [f"idfields.{fence_sequence(layout, node)}"],
        ).rows
        return int(rows[0][0])

    def _holder_name(self) -> str:
        return check_length("lease holder", _holders.this_process(self._holder), 255)

    def _now_ms(self) -> int:
        return self._clock() // _NS_PER_MS


class _Row(NamedTuple):
    """A lease row as a claim reads it (a tuple: a claim may read a thousand of them)."""

    key: str
    node: int
    holder: str
    acquired: int
    expires: int


class _Backoff:
    """After a database error, no attempt before a delay that doubles up to 10 s; thread-safe,
    so the generators of several layouts sharing a source back off together."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._delay_ms = 0
        self._retry_at_ms = 0
        self._error: Exception | None = None

    def check(self, now_ms: int) -> None:
        with self._lock:
            if self._error is None or now_ms >= self._retry_at_ms:
                return
            wait_s, error = (self._retry_at_ms - now_ms) / 1000, self._error
        raise NodeError(
            f"node leases are unavailable: the database failed ({error!r}); the next attempt "
            f"is in {wait_s:.3f} s (back-off up to {_MAX_BACKOFF_MS / 1000:g} s). Check the "
            "database connection; no ID was issued"
        ) from error

    def failed(self, now_ms: int, error: Exception) -> None:
        with self._lock:
            self._delay_ms = min(max(2 * self._delay_ms, _FIRST_BACKOFF_MS), _MAX_BACKOFF_MS)
            self._retry_at_ms = now_ms + self._delay_ms
            self._error = error

    def succeeded(self) -> None:
        with self._lock:
            self._delay_ms = 0
            self._error = None


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
        self._source = source
        self.layout = layout
        self.node = node
        self.reclaimed = reclaimed
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
        )

    def _renew_after_ns(self) -> int:
        return (self._renewed + self._source._ttl_ms // 3) * _NS_PER_MS

    def renew(self) -> tuple[int, int]:
        """Extend the lease; NodeError if another process took it meanwhile (L1)."""
        now = self._source._now_ms()
        started = time.perf_counter()
        # Never shorten the promise: a clock that stepped back must not free timestamps we used.
        expires = max(self._expires, now + self._source._ttl_ms)
        database = self._source._database
        try:
            renewable = may_renew(database, self._expires)
            if renewable:
                with durable(database):
                    matched = database.execute(
                        "UPDATE idfields_node_lease SET expires_at_ms = %s "
                        "WHERE layout = %s AND node = %s AND holder = %s",
                        [expires, self.layout, self.node, self._holder],
                    ).rowcount
        except Exception:
            emit("lease.failed", layout=self.layout)
            raise
        if not renewable:
            emit("lease.lost", layout=self.layout, node=str(self.node))
            raise NodeError(
                f"lease lost: node {self.node} of layout {self.layout!r} lapsed (at "
                f"{self._expires} ms) before the coordination database restarted or changed, "
                "and another process may have claimed it in commits the database lost; this "
                "generator takes another node once the database's grace has passed"
            )
        if matched != 1:
            emit("lease.lost", layout=self.layout, node=str(self.node))
            raise NodeError(
                f"lease lost: node {self.node} of layout {self.layout!r} lapsed "
                f"(at {self._expires} ms) and another process holds it now, or the "
                "coordination database lost the claim (a restore or a failover); this generator "
                "takes another node. Renewals failed for longer than the lease ttl: check the "
                "database connection"
            )
        self._expires, self._renewed = expires, now
        emit(
            "lease.renewed", time.perf_counter() - started, layout=self.layout, node=str(self.node)
        )
        return self._renew_after_ns(), expires * _NS_PER_MS

    def release(self, issued_until_ns: int) -> None:
        """Free the node; its next holder is fenced after what this holder really issued (L6)."""
        until = max(-(-issued_until_ns // _NS_PER_MS), self._source._now_ms())
        database = self._source._database
        try:
            with durable(database):
                database.execute(
                    "UPDATE idfields_node_lease SET holder = %s, expires_at_ms = %s "
                    "WHERE layout = %s AND node = %s AND holder = %s",
                    ["", min(until, self._expires), self.layout, self.node, self._holder],
                )
        except Exception:  # the lease lapses after its ttl anyway; other leases still release
            logger.warning(
                "could not release node %s of layout %r; it lapses at its expiry",
                self.node,
                self.layout,
                exc_info=True,
            )


def list_leases(
    database: Database, layout: str | None = None, *, now_ns: int | None = None
) -> list[LeaseInfo]:
    """Who holds which node, since and until when (released and lapsed rows are not live), and
    which PostgreSQL backends holding one are gone.

    ``layout`` is a layout name: the rows of every layout of that name (``LeaseInfo.layout``
    is the lease key, ``name#<fingerprint>`` for a user layout).
    """
    sql = "SELECT layout, node, holder, acquired_at_ms, expires_at_ms FROM idfields_node_lease"
    params: list[object] = []
    if layout is not None:
        where, params = _named(layout)
        sql += f" WHERE {where}"
    now = (time.time_ns() if now_ns is None else now_ns) // _NS_PER_MS
    rows = database.execute(sql + " ORDER BY layout, node", params).rows
    if layout is not None:
        rows = [row for row in rows if _is_named(text(row[0]), layout)]
    backends = _live_backends(database, [text(row[2]) for row in rows if int(row[4]) >= now])
    return [
        LeaseInfo(
            text(name),
            int(node),
            text(holder),
            _datetime(int(acquired)),
            _datetime(int(expires)),
            live=bool(holder) and int(expires) >= now,
            backend_gone=_backend_gone(_holders.parse(text(holder)), backends),
        )
        for name, node, holder, acquired, expires in rows
    ]


def free_dead_holders(database: Database) -> int:
    """Mark free every lease whose holder provably cannot issue again (an app process of this
    very place that is gone, L3), keeping its expiry as the next holder's fence (L4): listings
    stop counting it, and a claim takes the node once that fence is within its run-ahead (L5),
    exactly as it would reclaim the row. For the parent of a process killed by SIGKILL (Django's
    autoreloader kills the serving child so), which no handler of the child sees. Returns how
    many rows it freed."""
    rows = database.execute(
        "SELECT layout, node, holder FROM idfields_node_lease WHERE holder <> ''"
    ).rows
    freed = 0
    for layout, node, holder in rows:
        if _holders.parse(text(holder)).provably_dead():
            freed += database.execute(
                "UPDATE idfields_node_lease SET holder = '' "
                "WHERE layout = %s AND node = %s AND holder = %s",
                [layout, node, holder],
            ).rowcount
    return freed


class _FencedAhead(Exception):
    """A claimed node's durable fence lies past the run-ahead: the claim is rolled back."""


def _live_backends(database: Database, holders: list[str]) -> set[int] | None:
    """The pids of PostgreSQL's live backends, when a database backend is one of ``holders``."""
    if database.vendor != "postgresql" or not any(
        _holders.parse(holder).kind == "database" for holder in holders
    ):
        return None
    return {int(pid) for (pid,) in database.execute("SELECT pid FROM pg_stat_activity").rows}


def _backend_gone(who: _holders.Holder, backends: set[int] | None) -> bool:
    """A database backend holder whose pid is not among ``backends`` (read just before)."""
    return who.kind == "database" and backends is not None and who.pid not in backends


def _named(name: str) -> tuple[str, list[object]]:
    """A WHERE clause matching the lease keys of layouts named ``name``; check with _is_named."""
    pattern = name.replace("!", "!!").replace("%", "!%").replace("_", "!_") + "#%"
    return "layout = %s OR layout LIKE %s ESCAPE '!'", [name, pattern]


def _is_named(key: str, name: str) -> bool:
    return key == name or key.startswith(name + "#")  # exact: LIKE may ignore case (MySQL)


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


def read_node_range(database: Database) -> noderange.NodeRange:
    """The database's node range: every node where the SQL functions do not record one."""
    if database.vendor != "postgresql":
        return noderange.WHOLE
    exists = database.execute(noderange.EXISTS).rows
    rows = database.execute(noderange.READ).rows if exists and exists[0][0] else []
    return noderange.from_rows(exists, rows)


def _check_one_lease_table(database: Database) -> None:
    """On PostgreSQL with the SQL functions installed: refuse to lease from another
    ``idfields_node_lease`` than theirs (a copy in a schema earlier on the search_path, one per
    tenant), as they refuse such a caller: two tables would hand out one node space twice."""
    if database.vendor != "postgresql":
        return
    installed = database.execute(
        "SELECT pg_catalog.to_regprocedure('idfields.lease_table()') IS NOT NULL"
    ).rows
    if not installed[0][0]:
        return
    ours, theirs = database.execute(
        f"SELECT ({_QUALIFIED} pg_catalog.to_regclass('idfields_node_lease')), "
        f"({_QUALIFIED} idfields.lease_table())"
    ).rows[0]
    if ours is not None and theirs is not None and ours != theirs:
        raise NodeError(
            f"this process leases nodes from {ours}, but the database functions "
            f"(idfields.next_<layout>()) lease from {theirs}: the two would hand out the same "
            "nodes and repeat IDs. Keep one copy of the idfields tables on the connection's "
            f"search_path ({theirs} first), or install the functions again with lease_schema "
            "set to the schema of the table this process uses"
        )


# The schema-qualified name of the relation whose OID follows.
_QUALIFIED = (
    "SELECT pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) '.' "
    "OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c.relname) FROM pg_catalog.pg_class AS c "
    "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace WHERE c.oid ="
)


def _candidates(nodes: range, rows: Mapping[int, _Row], now: int) -> Iterator[int]:
    """Free nodes in random order: a few random probes first, then all the others. Free: never
    used, lapsed, or released with a fence within our run-ahead (L5)."""

    def free(node: int) -> bool:
        row = rows.get(node)
        return (
            row is None
            or row.expires < now
            or (not row.holder and row.expires <= now + CLAIM_AHEAD_MS)
        )

    probes = random.sample(nodes, min(_PROBES, len(nodes)))
    yield from (node for node in probes if free(node))
    if len(nodes) > _PROBES:
        tried = set(probes)
        rest = [node for node in nodes if node not in tried and free(node)]
        random.shuffle(rest)
        yield from rest
