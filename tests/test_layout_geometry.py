"""Layout.geometry: the one place a clock-driven generator learns where tick, sequence and
fixed fields sit in an ID; checked against compose() on layouts of every shape."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from idfields.layouts import (
    CHRONICLE,
    DECIMAL,
    SNOWFLAKE,
    TRACEID,
    Constant,
    Layout,
    Node,
    Sequence,
    Timestamp,
)

TAGGED = Layout(
    "tagged",
    [
        Constant(2, value=1, name="version"),
        Timestamp(40, unit="ms", epoch=datetime(2025, 1, 1, tzinfo=UTC)),
        Node(8),
        Sequence(12, minimum=3),
    ],
)


@pytest.mark.parametrize("layout", [SNOWFLAKE, TRACEID, CHRONICLE, TAGGED], ids=lambda x: x.name)
def test_geometry_composes_the_same_ids_as_the_layout(layout: Layout) -> None:
    geometry = layout.geometry
    node = layout.node_fields[0]
    tick = layout.tick_of(1_800_000_000_123_456_789)
    sequence = layout.sequence
    for index in {0, min(1, geometry.ids_per_tick - 1), geometry.ids_per_tick - 1}:
        values = {layout.timestamp.name: tick % geometry.modulus, node.name: 3}  # type: ignore[union-attr]
        if sequence is not None:
            values[sequence.name] = sequence.minimum + index
        expected = (
            geometry.fixed
            + 3 * node.multiplier
            + (tick % geometry.modulus) * geometry.tick_multiplier
            + index * geometry.step
        )
        assert layout.compose(values) == expected
    assert geometry.tick_of(1_800_000_000_123_456_789) == tick
    assert geometry.skew_ticks(1_000_000_000) == 1_000_000_000 // geometry.unit_ns
    assert (geometry.max_tick is None) == layout.wraps


def test_a_layout_without_a_timestamp_has_no_geometry() -> None:
    with pytest.raises(TypeError, match="has no timestamp"):
        DECIMAL.geometry  # noqa: B018
