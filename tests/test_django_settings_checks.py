"""IDFIELDS values of the wrong type or out of range: a check error naming the key and the fix,
and a clear refusal at the first ID, never a bare TypeError/KeyError later.

The cases: ``LEASE_TTL: "60"`` and ``JS_SAFE: "no"`` (which a truthiness test reads as true),
``IDFIELDS = "static"`` (which must not crash the checks with a ValueError), and an unknown
``DATABASE`` with a static node source.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.checks import CheckMessage
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from idfields.django_app.checks import check_settings
from tests.django_project.testapp.models import Event

pytestmark = pytest.mark.core


def messages(idfields: Any) -> list[CheckMessage]:
    with override_settings(IDFIELDS=idfields):
        return check_settings(None)


def first_id(idfields: Any) -> int:
    with override_settings(IDFIELDS=idfields):
        return Event._meta.pk.next_id()  # type: ignore[union-attr,no-any-return]


@pytest.mark.parametrize(
    ("idfields", "says"),
    [
        (
            {"NODE": 5, "LEASE_TTL": "60"},
            "IDFIELDS['LEASE_TTL'] = '60' (str) is not valid; give a number of seconds in 0.003..",
        ),
        (
            {"NODE": 5, "LEASE_TTL": 0},
            "IDFIELDS['LEASE_TTL'] = 0 (int) is not valid; give seconds in 0.003..86400",
        ),
        ({"NODE": 5, "MAX_SKEW": -1}, "IDFIELDS['MAX_SKEW'] = -1 (int) is not valid"),
        (
            {"NODE": 5, "JS_SAFE": "no"},
            "IDFIELDS['JS_SAFE'] = 'no' (str) is not valid; give True or False",
        ),
        ({"NODE": "5"}, "IDFIELDS['NODE'] = '5' (str) is not valid; give a whole number"),
        ({"NODE": True}, "IDFIELDS['NODE'] = True (bool) is not valid"),
        (
            {"NODE": 5, "LAYOUTS": ["orders"]},
            "IDFIELDS['LAYOUTS'] = ['orders'] (list) is not valid; give a dict",
        ),
        (
            {"NODE": 5, "GENERATORS": {"snowflake": 3}},
            "give a dotted path or callable for 'snowflake'",
        ),
        ("static", "IDFIELDS = 'static' is a str, not a dict; write it as a dict"),
    ],
)
def test_a_value_of_the_wrong_type_is_a_check_error_and_refused(idfields: Any, says: str) -> None:
    found = messages(idfields)
    assert [m.id for m in found if says in m.msg] == ["idfields.E008"]
    with pytest.raises(ImproperlyConfigured, match="makes no ID from invalid settings"):
        first_id(idfields)


def test_an_unknown_database_is_a_check_error_whatever_the_node_source() -> None:
    for idfields in ({"DATABASE": "replica"}, {"DATABASE": "replica", "NODE": 5}):
        found = [m for m in messages(idfields) if m.id == "idfields.E006"]
        assert len(found) == 1 and "'replica' is not in DATABASES" in found[0].msg
    with pytest.raises(ImproperlyConfigured, match="'replica' is not in DATABASES"):
        first_id({"DATABASE": "replica", "NODE_SOURCE": "lease"})


def test_valid_settings_raise_no_e008() -> None:
    valid = {"NODE": 5, "LEASE_TTL": 60, "MAX_SKEW": 0.5, "JS_SAFE": False, "LAYOUTS": {}}
    assert [m.id for m in messages(valid) if m.id == "idfields.E008"] == []
    assert first_id(valid) > 0
