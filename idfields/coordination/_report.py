"""What an operator asks first: who holds which node, how much room each layout has left, and
how fast a fleet may restart before dead holders use up the node space.

Shared by ``manage.py idfields_nodes`` / ``idfields_report``, ``python -m idfields.sqlalchemy_ext
nodes`` and the metrics (``idfields.metrics.otel``); app processes and database backends are
read from the same lease table, so they show side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from idfields._text import table
from idfields.coordination import _holders
from idfields.coordination._counters import MAX_LAUNCH_ID, counter_value, current_launch
from idfields.coordination._database import Database
from idfields.coordination._decimal import decimal_fields
from idfields.coordination._leases import LeaseInfo, list_leases
from idfields.layouts import Layout

HEADERS = ("layout", "node", "kind", "host", "pid", "since (UTC)", "expires (UTC)", "state")


def holder_rows(leases: Sequence[LeaseInfo]) -> list[tuple[str, ...]]:
    """One row per lease: app processes and database backends alike, in :data:`HEADERS` order.

    State is ``live``, ``dead`` (live on paper, but its holder provably cannot issue again: a
    claim takes the node once its expiry is within a second), ``expired`` or ``released``. A
    backend gone from ``pg_stat_activity`` is dead here as in the view ``idfields.node_holders``;
    an app process is dead only when this process can prove it (:mod:`._holders`: same host,
    boot and PID namespace, pid gone), which the view, seeing no host's processes, never does.
    """
    rows: list[tuple[str, ...]] = []
    for lease in leases:
        holder = _holders.parse(lease.holder)
        if not lease.holder:
            state = "released"
        elif not lease.live:
            state = "expired"
        else:
            state = "dead" if lease.backend_gone or holder.provably_dead() else "live"
        rows.append(
            (
                lease.layout,
                str(lease.node),
                holder.kind,
                holder.host or "-",
                "-" if holder.pid is None else str(holder.pid),
                f"{lease.acquired_at:%Y-%m-%d %H:%M:%S}",
                f"{lease.expires_at:%Y-%m-%d %H:%M:%S}",
                state,
            )
        )
    return rows


def holder_table(leases: Sequence[LeaseInfo], *, released: bool = False) -> str:
    """:func:`holder_rows` under :data:`HEADERS`, aligned for people; one line when empty.

    Released rows (one per node any process ever held and gave back) outnumber the rest in a
    long-lived fleet, so they are counted, not listed, unless ``released``."""
    rows = holder_rows(leases)
    shown = rows if released else [row for row in rows if row[-1] != "released"]
    text = table(HEADERS, shown, right=frozenset()) if shown else "no node leases held"
    hidden = len(rows) - len(shown)
    return f"{text}\n{hidden} released leases not shown (--all lists them)" if hidden else text


@dataclass(frozen=True)
class NodeRoom:
    """Nodes of a time-based layout: held by live processes, and free."""

    layout: Layout
    in_use: int

    @property
    def free(self) -> int:
        return self.layout.node_count - self.in_use

    def restarts_absorbed(self, ttl_s: float) -> float:
        """Restarts per second the free nodes absorb: a node a killed process held lapses
        ``ttl_s`` after its last renewal (a second earlier when a claimer in its own PID and
        time namespace proves it dead)."""
        return self.free / ttl_s


@dataclass(frozen=True)
class LaunchRoom:
    """A DecimalId launch: its id, and the generator ids it has left."""

    layout: Layout
    launch: int
    generators_used: int

    @property
    def generators_total(self) -> int:
        return decimal_fields(self.layout)[0].size

    @property
    def generators_left(self) -> int:
        return max(self.generators_total - self.generators_used, 0)

    @property
    def launches_left(self) -> int:
        return MAX_LAUNCH_ID - self.launch


def node_room(database: Database, layout: Layout) -> NodeRoom:
    """Live leases of ``layout`` (dead holders count as used until their leases end)."""
    leases = list_leases(database, layout.lease_key)
    return NodeRoom(layout, sum(1 for lease in leases if lease.live))


def launch_room(database: Database, layout: Layout) -> LaunchRoom:
    """The current launch of a DecimalId layout and its generator ids used so far."""
    decimal_fields(layout)  # refuses layouts that are not DecimalId-shaped, naming the fix
    launch = current_launch(database)
    return LaunchRoom(layout, launch, counter_value(database, f"generator:{launch}"))


def room_line(database: Database, layout: Layout, ttl_s: float) -> str:
    """One line per layout: nodes free and restarts absorbed, or generator ids left."""
    if layout.timestamp is None:
        room = launch_room(database, layout)
        return (
            f"{layout.name}: launch {room.launch}, {room.launches_left:,} launch ids left; "
            f"{room.generators_left:,} of {room.generators_total:,} generator ids left in this "
            f"launch; {layout.runs_out_text}"
        )
    nodes = node_room(database, layout)
    return (
        f"{layout.name}: {nodes.free:,} of {layout.node_count:,} nodes free ({nodes.in_use} "
        f"leased); absorbs {nodes.restarts_absorbed(ttl_s):,.1f} restarts/s from other hosts "
        f"at a {ttl_s:g} s lease ttl (a killed holder's node lapses with its lease); "
        f"timestamps run out: {layout.runs_out_text}"
    )
