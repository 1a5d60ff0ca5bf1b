"""One map from layouts to their database functions, read by Django, SQLAlchemy and the key
conversions alike; user layouts installed by InstallLayoutFunctions are in it."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from idfields import sql
from idfields.errors import LayoutError
from idfields.layouts import (
    BUILTIN_LAYOUTS,
    SNOWFLAKE_JS,
    Constant,
    Layout,
    Node,
    Sequence,
    Timestamp,
)
from idfields.sql.catalog import BUILTIN_FUNCTIONS, functions_of
from idfields.sql.layouts import render_layout_function

ORDERS = Layout(
    "orders",
    [Timestamp(41, unit="ms", epoch=datetime(2025, 1, 1, tzinfo=UTC)), Node(8), Sequence(14)],
)
# Time-leading (a conversion accepts it) but not expressible in SQL: the Sequence is not last.
TAILED = Layout("tailed", [Timestamp(41), Node(10), Sequence(9), Constant(3, value=1)])


def _created(script: str) -> set[str]:
    """The functions ``script`` creates, named without quotes (the renderer quotes them)."""
    found = re.findall(r"CREATE OR REPLACE FUNCTION (idfields\.[\w\"]+)\(", script)
    return {_unquoted(name) for name in found}


def _unquoted(name: str) -> str:
    return name.replace('"', "")


def test_every_builtin_function_is_created_by_the_sql() -> None:
    created = _created(sql.load(sql.VERSION))
    for name, functions in BUILTIN_FUNCTIONS.items():
        assert BUILTIN_LAYOUTS[name] is not None
        named = [functions.next, functions.decode, functions.next_at]
        assert {_unquoted(f) for f in named if f} <= created, name


def test_a_user_layouts_functions_are_the_ones_its_migration_creates() -> None:
    functions = functions_of(ORDERS)
    create, _ = render_layout_function(ORDERS)
    named = {functions.next, functions.next_at, functions.decode, functions.take}
    assert None not in named
    assert {_unquoted(f) for f in named if f} <= _created(create)
    assert functions.next_call == 'idfields."next_orders"()'
    assert functions_of("orders") == functions


def test_take_functions_are_created_for_time_based_layouts() -> None:
    created = _created(sql.load(sql.VERSION))
    assert {_unquoted(f.take) for f in BUILTIN_FUNCTIONS.values() if f.take} <= created
    assert _unquoted(functions_of(ORDERS).take) in _created(render_layout_function(ORDERS)[0])
    assert BUILTIN_FUNCTIONS["decimal"].take is None


def test_builtin_names_resolve_to_their_own_or_rendered_functions() -> None:
    assert functions_of("decimal").next_call == "idfields.next_decimal()"
    assert functions_of("snowflake_js").next == functions_of(SNOWFLAKE_JS).next
    with pytest.raises(LayoutError, match="cannot be generated inside PostgreSQL"):
        functions_of("globalid")
    with pytest.raises(LayoutError, match="Sequence is not the last"):
        functions_of(TAILED)
    with pytest.raises(LayoutError, match="needs a layout name"):
        functions_of("")


def test_a_user_layout_named_like_a_builtin_is_not_given_the_builtins_functions() -> None:
    impostor = Layout("snowflake", [Timestamp(40), Node(11), Sequence(12)])
    with pytest.raises(LayoutError, match="used by the built-in functions"):
        functions_of(impostor)
    rebuilt = Layout.from_spec(BUILTIN_LAYOUTS["snowflake"].to_spec())
    assert functions_of(rebuilt) is BUILTIN_FUNCTIONS["snowflake"]


def test_django_sqlalchemy_and_conversions_read_the_same_map() -> None:
    from idfields.django_app.fields import KSortedIdField
    from idfields.migrations.convert import Target
    from idfields.sqlalchemy_ext import id_column_core

    expected = functions_of(ORDERS).next_call
    django_default = KSortedIdField(layout="orders", generation="db").db_default
    assert django_default.template % {"function": django_default.extra["function"]} == expected
    column = id_column_core("id", layout=ORDERS, generation="db")
    assert column.server_default.arg.text == expected  # type: ignore[union-attr]
    assert Target.of(ORDERS, generation="db").db_default == expected
    for refuse in (
        lambda: KSortedIdField(layout="globalid", generation="db"),
        lambda: id_column_core("id", layout="globalid", generation="db"),
        lambda: Target.of(TAILED, generation="db"),
    ):
        with pytest.raises(ValueError, match="cannot be generated inside PostgreSQL"):
            refuse()


def test_django_checks_that_a_settings_layout_can_be_generated_by_the_database() -> None:
    from django.test import override_settings

    from idfields.django_app.fields import KSortedIdField

    field = KSortedIdField(layout="tailed", generation="db")  # settings are not read yet
    with override_settings(IDFIELDS={"LAYOUTS": {"tailed": TAILED, "orders": ORDERS}}):
        (error,) = field._check_generation([])
        assert error.id == "idfields.E035" and "Sequence is not the last" in error.msg
        assert KSortedIdField(layout="orders", generation="db")._check_generation([]) == []
