"""Run ids from a coordinator (the ``runid`` layout), as Chibrary's call numbers end up doing
(Peter Harkins, "Distributed ID Generation and Bit Packing").

A process asks the coordinator for a run id when it starts and whenever it has used up the
run's sequence (16,384 IDs for ``runid``; CounterGenerator calls ``acquire`` again then). The
coordinator is the project's database: the persistent counter ``run:<layout>`` in
``idfields_counter``, taken under its row lock, so a run id is never handed out twice, whatever
crashes; a process never has to report back at its end.
"""

from __future__ import annotations

from idfields.coordination._counters import next_value
from idfields.coordination._database import Database
from idfields.errors import LayoutExhausted, NodeError
from idfields.layouts import Layout, PlacedField
from idfields.nodes import Assignment

COUNTER_PREFIX = "run:"


class RunIdSource:
    """A :class:`~idfields.nodes.NodeSource` handing out never-used run ids of a counter layout
    with one Node field: ``make_generator("runid", RunIdSource(database))``."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def __repr__(self) -> str:
        return "RunIdSource()"

    def acquire(self, layout: Layout) -> Assignment:
        placed = run_field(layout)
        taken = next_value(self._database, counter_name(layout))
        run = placed.minimum + taken - 1
        if run > placed.maximum:
            raise LayoutExhausted(
                f"layout {layout.name!r} has used all {placed.size:,} run ids (counter "
                f"{counter_name(layout)!r}); move to a new layout version with a wider run field"
            )
        return Assignment({placed.name: run})


def counter_name(layout: Layout) -> str:
    """The ``idfields_counter`` row of the layout's run ids."""
    return COUNTER_PREFIX + layout.name


def run_field(layout: Layout) -> PlacedField:
    """The layout's single Node field, or an error naming what does not fit."""
    if layout.timestamp is not None or len(layout.node_fields) != 1:
        raise NodeError(
            f"RunIdSource needs a layout without a timestamp and with one Node field (the run "
            f"id), like 'runid'; layout {layout.name!r} is not one. Use a LeaseSource for "
            "time-based layouts, DecimalSource for 'decimal'"
        )
    return layout.node_fields[0]
