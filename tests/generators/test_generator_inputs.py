"""Wrong inputs are refused where they are given, with the fix, never accepted silently; and the
permutation key never shows where tracebacks and error reports look."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from django.test import override_settings
from generator_support import fresh_node

from idfields import LayoutError, Node, Sequence, StaticNode, Timestamp, make_generator
from idfields.codecs._permutation import KeyedPermutation
from idfields.errors import NodeError, ValueOutOfRange
from idfields.layouts import DECIMAL, SNOWFLAKE

pytestmark = pytest.mark.core

KEY = "9e1d4c2b7a6f58e3d0c1b2a3948576f6e5d4c3b2a1908f7e6d5c4b3a29180706"  # a test key


@pytest.mark.parametrize("value", [1.5, True, 2.0, "3"])
def test_compose_refuses_a_value_that_is_not_an_int(value: Any) -> None:
    with pytest.raises(ValueOutOfRange, match="whole number"):
        SNOWFLAKE.compose(timestamp=value, node=1, sequence=0)
    with pytest.raises(ValueOutOfRange, match="whole number"):
        SNOWFLAKE.compose(timestamp=1, node=value, sequence=0)


@pytest.mark.parametrize(
    "spec",
    [
        lambda: Node(True),
        lambda: Node(10, minimum=1.0),
        lambda: Sequence(12.0),
        lambda: Timestamp(41, maximum=False),
    ],
)
def test_a_field_of_the_wrong_type_is_refused(spec: Any) -> None:
    with pytest.raises(LayoutError, match="whole number"):
        spec()


@pytest.mark.parametrize(
    "options",
    [
        {"max_wait_ns": -1},
        {"max_wait_ns": 0.5},
        {"max_wait_ns": True},
        {"max_skew_ns": -1},
        {"max_skew_ns": 1e9},
    ],
)
def test_a_wait_or_skew_bound_must_be_a_whole_number_of_ns(options: dict[str, Any]) -> None:
    with pytest.raises(ValueOutOfRange, match=r"max_(wait|skew)_ns"):
        make_generator("snowflake", node=fresh_node(), **options)


def test_launch_zero_through_a_static_node_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IDFIELDS_DEVELOPMENT", raising=False)
    with pytest.raises(NodeError, match=r"launch_id=0 is reserved for tests.*IDFIELDS_DEVELOPMENT"):
        make_generator(DECIMAL, StaticNode(generator_id=fresh_node(), launch_id=0))()
    monkeypatch.setenv("IDFIELDS_DEVELOPMENT", "1")
    assert make_generator(DECIMAL, StaticNode(generator_id=fresh_node(), launch_id=0))() > 0


def test_a_node_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(NodeError, match="integer"):
        make_generator("snowflake", node=True)  # type: ignore[arg-type]
    with pytest.raises(NodeError, match="integer"):
        make_generator("snowflake", StaticNode(node=1.0))()  # type: ignore[arg-type]


# -- the permutation key ---------------------------------------------------------------------------


def test_the_django_settings_never_show_the_permutation_key() -> None:
    from idfields.django_app.conf import get_settings

    with override_settings(IDFIELDS={"PERMUTATION_KEY": KEY}):
        resolved = get_settings()
        assert resolved.permutation_key == KEY
        assert KEY not in repr(resolved) and KEY not in str(resolved)
        with pytest.raises(TypeError, match="permutation key"):
            pickle.dumps(resolved)
        assert copy.deepcopy(resolved) is resolved


def test_a_half_built_permutation_has_a_repr() -> None:
    half = KeyedPermutation.__new__(KeyedPermutation)
    assert "KeyedPermutation" in repr(half) and "hidden" in repr(half)
