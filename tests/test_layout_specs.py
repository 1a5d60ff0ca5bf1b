"""Layouts stay valid for decades: frozen, rebuilt exactly from their spec, loadable when spent.

A migration stores ``Layout.to_spec()`` and rebuilds the layout every time it is loaded, for as
long as the project lives; a layout that refused to construct after its end date would stop the
whole migration history from loading.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from datetime import UTC, datetime

import pytest

from idfields import LayoutError, LayoutExhausted, StaticNode, make_generator
from idfields.layouts import BUILTIN_LAYOUTS, SNOWFLAKE, Layout, Node, Sequence, Timestamp

# 20-bit seconds from 1970: it ran out on 1970-01-13.
SPENT = Layout("spent", [Timestamp(20, unit="s"), Node(4), Sequence(8)])
ORDERS = Layout(
    "orders",
    [Timestamp(41, unit="ms", epoch=datetime(2025, 1, 1, tzinfo=UTC)), Node(8), Sequence(14)],
)


def test_a_layout_cannot_be_changed() -> None:
    limit = SNOWFLAKE.limit
    with pytest.raises(dataclasses.FrozenInstanceError, match="immutable"):
        SNOWFLAKE.limit = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del SNOWFLAKE.name
    with pytest.raises(TypeError):
        SNOWFLAKE._by_name["x"] = SNOWFLAKE.placed[0]  # type: ignore[index]
    assert SNOWFLAKE.limit == limit


@pytest.mark.parametrize("layout", [*BUILTIN_LAYOUTS.values(), ORDERS, SPENT])
def test_copies_and_pickles_are_equal_layouts(layout: Layout) -> None:
    for twin in (copy.copy(layout), copy.deepcopy(layout), pickle.loads(pickle.dumps(layout))):
        assert twin == layout and twin.to_spec() == layout.to_spec()


@pytest.mark.parametrize("layout", [*BUILTIN_LAYOUTS.values(), ORDERS, SPENT])
def test_from_spec_rebuilds_every_field_including_the_epoch(layout: Layout) -> None:
    rebuilt = Layout.from_spec(layout.to_spec())
    assert rebuilt == layout
    assert rebuilt.fields == layout.fields
    if layout.is_time_based:
        assert rebuilt.epoch_ns == layout.epoch_ns
        some_id = layout.compose({p.name: p.minimum + 1 for p in layout.placed})
        assert rebuilt.decode(some_id).time == layout.decode(some_id).time


def test_from_spec_keeps_a_non_default_epoch() -> None:
    """Kills the mutant "from_spec forgets the epoch" (ORDERS' epoch is not the default)."""
    assert Layout.from_spec(ORDERS.to_spec())["timestamp"].spec.epoch == datetime(
        2025, 1, 1, tzinfo=UTC
    )
    assert ORDERS.epoch_ns != Layout("x", [Timestamp(41), Node(8), Sequence(14)]).epoch_ns


def test_a_spent_layout_constructs_loads_and_decodes() -> None:
    assert SPENT.runs_out == datetime(1970, 1, 13, 3, 16, 16, tzinfo=UTC)
    assert Layout.from_spec(SPENT.to_spec()) == SPENT
    decoded = SPENT.decode(SPENT.compose(timestamp=86_400, node=3, sequence=7))
    assert decoded.time == datetime(1970, 1, 2, tzinfo=UTC)
    assert decoded.values == {"timestamp": 86_400, "node": 3, "sequence": 7}


def test_a_spent_layout_refuses_only_to_issue_naming_its_end_date() -> None:
    ids = make_generator(SPENT, StaticNode(1))
    with pytest.raises(LayoutExhausted, match="1970-01-13T03:16:16"):
        ids()


def test_from_spec_shows_the_real_error_of_an_invalid_layout() -> None:
    spec = ORDERS.to_spec()
    spec["fields"][0]["width"] = 60  # too wide for 63 bits: a layout error, not a spec error
    with pytest.raises(LayoutError, match=r"exceeds 2\*\*63-1") as raised:
        Layout.from_spec(spec)
    assert "not a layout spec" not in str(raised.value)


def test_from_spec_names_a_malformed_spec() -> None:
    with pytest.raises(LayoutError, match=r"not a layout spec.*'fields'"):
        Layout.from_spec({"name": "x"})
