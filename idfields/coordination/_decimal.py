"""Generator ids for DecimalId: a fresh ``generator_id`` of the current launch per block.

The DecimalId scheme of the article "Pattern: ID Generation": a launch id per deployment, and
within it a generator id per process start and per exhausted counter, taken from a persistent
synchronized counter (``generator:<launch>``), so no (launch, generator) pair is ever issued twice.

On PostgreSQL the database functions claim from the same counter, and a rollback can undo
their increment after IDs went out under the generator id; every claim here also passes the
value their allocator records (the sequence ``idfields.decimal_issued``, invariant D8 of
docs/explanation/lease-protocol-database.md).
"""

from __future__ import annotations

from idfields.coordination._counters import (
    LAUNCH_ENV,
    RECORD_LAUNCH_HINT,
    current_launch,
    next_value,
)
from idfields.coordination._database import Database
from idfields.coordination._identity import change_launch, observe
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
        epoch = observe(self._database)  # a changed database moves DecimalId to a new launch
        if epoch is not None and not epoch.settled:
            raise NodeError(
                f"{epoch.cause}, and another session is recording the new launch for "
                "DecimalId; retry once its transaction has ended (no ID was issued)"
            )
        launch = current_launch(self._database)
        moved = change_launch(self._database)
        if launch < moved:
            raise NodeError(
                f"{LAUNCH_ENV}={launch} names a launch older than launch {moved}, recorded when "
                "the coordination database changed (a failover, restore or cutover that may "
                "have lost generator ids claimed under it); set it to a launch recorded since "
                f"({RECORD_LAUNCH_HINT}), or unset it to use the latest"
            )
        if not launch_field.minimum <= launch <= launch_field.maximum:
            raise NodeError(
                f"launch {launch} does not fit {LAUNCH_FIELD} "
                f"{launch_field.minimum}..{launch_field.maximum} of layout {layout.name!r}; "
                f"use a launch id in that range"
            )
        taken = next_value(
            self._database,
            f"generator:{launch}",
            lambda database: database_side_floor(database, launch),
        )
        generator = generator_field.minimum + taken - 1
        if generator > generator_field.maximum:
            raise LayoutExhausted(
                f"launch {launch} has used all {generator_field.size:,} generator ids of layout "
                f"{layout.name!r}; record a new launch ({RECORD_LAUNCH_HINT}) and restart"
            )
        return Assignment({GENERATOR_FIELD: generator, LAUNCH_FIELD: launch})


def database_side_floor(database: Database, launch: int) -> int:
    """The value of counter ``generator:<launch>`` that the database functions issue under, from
    their allocator ((launch_id * 1000000 + value) * 100000 + block; 0 where they are not
    installed). Another launch gives 0: they move to a newer launch only once the counter row
    of the older one covers their value there, and never claim in an older one (D8)."""
    if database.vendor != "postgresql":
        return 0
    rows = database.execute(
        "SELECT CASE WHEN pg_catalog.has_sequence_privilege(c.oid, 'SELECT') "
        "THEN COALESCE(pg_catalog.pg_sequence_last_value(c.oid), 0) ELSE -1 END "
        "FROM pg_catalog.pg_class AS c "
        "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'idfields' AND c.relname = 'decimal_issued'"
    ).rows
    if not rows:  # the database functions are not installed
        return 0
    issued = int(rows[0][0])
    if issued < 0:
        raise NodeError(
            "this role may not read the database functions' decimal allocator (the generator id "
            "they issue under, which a rolled-back claim leaves out of the counter row), so it "
            "cannot claim a generator id safely: GRANT SELECT ON SEQUENCE "
            "idfields.decimal_issued TO the application's role (the install grants it to PUBLIC)"
        )
    issued //= 100_000  # the block
    return issued % 1_000_000 if issued // 1_000_000 == launch else 0


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
