"""Generator ids for DecimalId: a fresh ``generator_id`` of the current launch per block.

The DecimalId scheme of the article "Pattern: ID Generation": a launch id per deployment, and
within it a generator id per process start and per exhausted counter, taken from a persistent
synchronized counter (``generator:<launch>``), so no (launch, generator) pair is ever issued twice.
"""

from __future__ import annotations

from idfields.coordination._counters import RECORD_LAUNCH_HINT, current_launch, next_value
from idfields.coordination._database import Database
from idfields.errors import LayoutExhausted, NodeError
from idfields.layouts import Layout, PlacedField
from idfields.nodes import Assignment

GENERATOR_FIELD = "generator_id"
LAUNCH_FIELD = "launch_id"


class DecimalSource:
    """A :class:`~idfields.nodes.NodeSource` for layouts whose Node fields are generator_id and
    launch_id (``decimal`` and narrower test layouts); every call takes a never-used pair."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def __repr__(self) -> str:
        return "DecimalSource()"

    def acquire(self, layout: Layout) -> Assignment:
        generator_field, launch_field = decimal_fields(layout)
        launch = current_launch(self._database)
        if not launch_field.minimum <= launch <= launch_field.maximum:
            raise NodeError(
                f"launch {launch} does not fit {LAUNCH_FIELD} "
                f"{launch_field.minimum}..{launch_field.maximum} of layout {layout.name!r}; "
                f"use a launch id in that range"
            )
        taken = next_value(self._database, f"generator:{launch}")
        generator = generator_field.minimum + taken - 1
        if generator > generator_field.maximum:
            raise LayoutExhausted(
                f"launch {launch} has used all {generator_field.size:,} generator ids of layout "
                f"{layout.name!r}; record a new launch ({RECORD_LAUNCH_HINT}) and restart"
            )
        return Assignment({GENERATOR_FIELD: generator, LAUNCH_FIELD: launch})


def decimal_fields(layout: Layout) -> tuple[PlacedField, PlacedField]:
    """The generator_id and launch_id fields, or an error naming what the layout lacks."""
    names = {placed.name for placed in layout.node_fields}
    if layout.timestamp is not None or names != {GENERATOR_FIELD, LAUNCH_FIELD}:
        raise NodeError(
            f"DecimalSource needs a layout without a timestamp whose Node fields are "
            f"{GENERATOR_FIELD} and {LAUNCH_FIELD}; layout {layout.name!r} has "
            f"{sorted(names) or 'none'}. Use a LeaseSource for time-based layouts"
        )
    return layout[GENERATOR_FIELD], layout[LAUNCH_FIELD]
