"""The per-process registry: lazy configuration, re-configuration never repeats an ID."""

from __future__ import annotations

from pathlib import Path

import pytest

from idfields.errors import NodeError
from idfields.generators import make_generator
from idfields.hostshared import HostSharedGenerator
from idfields.layouts import Layout, Node, Sequence, Timestamp, get_layout
from idfields.nodes import StaticNode
from idfields.sqlalchemy_ext import configure, get_generator, id_default


def test_columns_defined_before_configure_use_the_later_configuration() -> None:
    default = id_default("snowflake")  # as at import time, before the app configures
    configure(source=lambda layout: StaticNode(17))
    assert get_layout("snowflake").decode(default()).values["node"] == 17
    assert get_generator("snowflake").node == {"node": 17}


def test_reconfiguring_with_the_same_node_never_repeats_an_id() -> None:
    default = id_default("snowflake")
    configure(source=lambda layout: StaticNode(3))
    before = [default() for _ in range(5000)]
    configure(source=lambda layout: StaticNode(3))  # same node again, same millisecond
    after = [default() for _ in range(5000)]
    assert min(after) > max(before)


def test_a_counter_block_handed_out_twice_is_refused() -> None:
    default = id_default("decimal")
    configure(source=lambda layout: StaticNode(generator_id=4242, launch_id=65))
    first = default()
    assert get_layout("decimal").decode(first).values["generator_id"] == 4242
    configure(source=lambda layout: StaticNode(generator_id=4242, launch_id=65))
    with pytest.raises(NodeError, match=r"again|cannot be renewed"):
        default()


def test_user_layouts_and_bad_configuration() -> None:
    mine = Layout(
        "sa_test_layout",
        [Timestamp(41, unit="ms"), Node(10), Sequence(12)],
    )
    default = id_default("sa_test_layout")
    configure(source=lambda layout: StaticNode(9), layouts=[mine])
    assert mine.decode(default()).values["node"] == 9
    with pytest.raises(ValueError, match="max_skew"):
        configure(max_skew=-1)
    with pytest.raises(TypeError, match="NodeSource"):
        configure(source=17)  # type: ignore[arg-type]


def test_another_id_source_behind_id_column(tmp_path: Path) -> None:
    shared = HostSharedGenerator("snowflake", node=6, path=tmp_path / "ids.state")
    default = id_default("snowflake")
    configure(generators={"snowflake": shared})
    ids = [default() for _ in range(100)]
    assert get_generator("snowflake") is shared
    assert {get_layout("snowflake").decode(value).values["node"] for value in ids} == {6}
    assert ids == sorted(ids) and len(set(ids)) == 100
    configure(generators={"snowflake": lambda: make_generator("traceid", node=1)})
    with pytest.raises(TypeError, match="not an ID source of layout 'snowflake'"):
        default()
