"""The node range of a database: the nodes its IDs use, database-side and app-side alike.

Two databases whose IDs meet in one table (shards publishing into one subscriber, primaries
replicating both ways) must never issue on the same node of a layout: each is given its own
range at install (``nodes=``), recorded in ``idfields.node_range()``. A node number means the
same in every layout, so ranges that are disjoint as numbers keep every layout's IDs apart; a
layout with fewer nodes than a range reaches uses the part of the range it has.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from idfields.errors import InvalidArgument, NodeRangeOverlap

# Implementation: nothing here is API.
__all__: list[str] = []

#: The largest node number a range can name (the SQL functions' integer).
MAX_NODE = 2**31 - 1

#: Whether the database records a range (the functions may be absent: MySQL, SQLite, or not
#: installed yet), then the range itself.
EXISTS = "SELECT pg_catalog.to_regprocedure('idfields.node_range()') IS NOT NULL"
READ = "SELECT first_node, last_node, fenced_until_ms FROM idfields.node_range()"
#: Which database a connection reaches: a physical standby (a read replica) is its primary's
#: database, not another one with its own range.
IDENTITY = (
    "SELECT (SELECT system_identifier FROM pg_catalog.pg_control_system())::text "
    "OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) pg_catalog.current_database()"
)


@dataclass(frozen=True)
class NodeRange:
    """Nodes ``first`` to ``last`` (inclusive); claims made here start after
    ``fenced_until_ms`` (unix ms), when the install gave this database nodes another may have
    used."""

    first: int
    last: int
    fenced_until_ms: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.first <= self.last <= MAX_NODE:
            raise InvalidArgument(
                f"a node range runs from a first to a last node, 0 <= first <= last <= "
                f"{MAX_NODE}, got {self.first}-{self.last}; give e.g. nodes=range(0, 512) or "
                f"nodes='0-511'"
            )

    @property
    def whole(self) -> bool:
        return self.first == 0 and self.last == MAX_NODE

    def __str__(self) -> str:
        return "all nodes" if self.whole else f"nodes {self.first}-{self.last}"

    def overlap(self, other: NodeRange) -> tuple[int, int] | None:
        """The nodes both ranges hold, as (first, last); None when they are disjoint."""
        first, last = max(self.first, other.first), min(self.last, other.last)
        return (first, last) if first <= last else None

    def nodes(self, minimum: int, maximum: int) -> range:
        """The nodes of a layout's node field (``minimum``..``maximum``) inside this range."""
        return range(max(minimum, self.first), min(maximum, self.last) + 1)


WHOLE = NodeRange(0, MAX_NODE)


def node_range(nodes: object) -> NodeRange:
    """``nodes`` as a range: None (every node), a ``range`` of step 1, a ``(first, last)``
    pair, a ``'first-last'`` string or a :class:`NodeRange`; anything else is refused."""
    if nodes is None:
        return WHOLE
    if isinstance(nodes, NodeRange):
        return nodes
    if isinstance(nodes, range) and nodes.step == 1 and len(nodes) > 0:
        return NodeRange(nodes.start, nodes.stop - 1)
    if isinstance(nodes, str):
        first, dash, last = nodes.partition("-")
        if dash and first.strip().isdigit() and last.strip().isdigit():
            return NodeRange(int(first), int(last))
    if (
        isinstance(nodes, tuple)
        and len(nodes) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in nodes)
    ):
        return NodeRange(nodes[0], nodes[1])
    raise InvalidArgument(
        f"nodes must be a non-empty range of step 1, a (first, last) pair or 'first-last' "
        f"(e.g. nodes=range(0, 512), (0, 511) or '0-511'), or None for every node; got {nodes!r}"
    )


def from_rows(exists: Iterable[tuple[Any, ...]], rows: Iterable[tuple[Any, ...]]) -> NodeRange:
    """The range :data:`EXISTS` and :data:`READ` returned (no function: every node)."""
    if not next(iter(exists), (False,))[0]:
        return WHOLE
    first, last, fence = next(iter(rows))
    return NodeRange(int(first), int(last), int(fence))


def overlapping(ranges: dict[str, NodeRange]) -> list[tuple[str, str, tuple[int, int]]]:
    """Every pair of named ranges that share nodes, with the nodes they share."""
    names = list(ranges)
    found = []
    for i, one in enumerate(names):
        for other in names[i + 1 :]:
            shared = ranges[one].overlap(ranges[other])
            if shared is not None:
                found.append((one, other, shared))
    return found


def describe_overlap(ranges: dict[str, NodeRange]) -> str | None:
    """The first pair of named ranges that share nodes, in words; None when all are disjoint."""
    pairs = overlapping(ranges)
    if not pairs:
        return None
    one, other, (first, last) = pairs[0]
    more = f" (and {len(pairs) - 1} more pairs)" if len(pairs) > 1 else ""
    return f"{one} ({ranges[one]}) and {other} ({ranges[other]}) share nodes {first}-{last}{more}"


def check_disjoint(ranges: dict[str, NodeRange]) -> None:
    """Refuse named databases (aliases, URLs) whose ranges share nodes, naming the first pair."""
    found = describe_overlap(ranges)
    if found is not None:
        raise NodeRangeOverlap(
            f"{found}: both issue the same IDs, and where their rows meet (a subscriber, a "
            "replicated table, a shard merge) one is lost. Give each database a range of its "
            "own when installing the SQL functions (InstallIdFunctions(..., nodes=range(a, b)) "
            "or op.install_id_functions(..., nodes=...)); docs/how-to/multiple-databases.md "
            "plans them"
        )
