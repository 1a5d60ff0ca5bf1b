"""Other ID sources behind the fields: IDFIELDS["GENERATORS"] names a factory per layout."""

from __future__ import annotations

import copy
import gc
from pathlib import Path

import pytest
from django.test import override_settings

from idfields.django_app.sources import bind_source, generator_for, reset
from idfields.errors import LayoutError
from idfields.generators import make_generator
from idfields.hostshared import HostSharedGenerator
from idfields.layouts import SNOWFLAKE, TRACEID
from tests.django_project.conftest import ALIASES
from tests.django_project.testapp.models import Author, Event

pytestmark = pytest.mark.django_db(databases=ALIASES)


def test_a_host_shared_generator_fills_the_pk(tmp_path: Path) -> None:
    made: list[HostSharedGenerator] = []

    def host_shared() -> HostSharedGenerator:
        made.append(HostSharedGenerator("snowflake", node=5, path=tmp_path / "ids.state"))
        return made[-1]

    with override_settings(IDFIELDS={"GENERATORS": {"snowflake": host_shared}}):
        authors = [Author.objects.using("sqlite").create(name=str(i)) for i in range(5)]
        Author.objects.using("sqlite").bulk_create([Author(name="bulk") for _ in range(50)])
    assert len(made) == 1  # built once, at first use
    ids = [author.pk for author in authors]
    assert ids == sorted(ids) and len(set(ids)) == 5
    assert {SNOWFLAKE.decode(value).values["node"] for value in ids} == {5}
    assert Author.objects.using("sqlite").filter(pk__in=ids).count() == 5


def test_a_factory_of_the_wrong_layout_is_refused() -> None:
    def wrong() -> object:
        return make_generator("traceid", node=1)

    settings = override_settings(IDFIELDS={"GENERATORS": {"snowflake": wrong}})
    with settings, pytest.raises(LayoutError, match=r"GENERATORS'\]\['snowflake'\].*traceid"):
        Author.objects.using("sqlite").create(name="x")


class Holder:
    """Something that keeps a bound source, as the fields do."""


def test_a_bound_source_lasts_until_reset() -> None:
    holder, gone = Holder(), Holder()
    source = bind_source(holder, "make", "snowflake")
    bind_source(gone, "make", "snowflake")
    assert holder.make is source is generator_for("snowflake")  # type: ignore[attr-defined]
    first = source()
    del gone
    gc.collect()
    reset()  # a holder that died meanwhile is skipped
    assert not hasattr(holder, "make")
    assert source.node is None  # type: ignore[attr-defined]  # closed: its lease released
    rebound = bind_source(holder, "make", "snowflake")
    assert rebound is not source and rebound() > first


def test_fields_follow_a_settings_change_after_their_first_row() -> None:
    def made() -> int:
        return int(Event.objects.using("sqlite").create().pk)

    before = made()  # binds the field's generator
    with override_settings(IDFIELDS={"NODE_SOURCE": "static", "NODE": 3, "LAYOUT": "traceid"}):
        inside = made()
    after = made()
    assert TRACEID.decode(inside).values["node_no"] == 3
    for value in (before, after):
        decoded = SNOWFLAKE.decode(value)
        assert decoded.in_layout and decoded.time is not None
        assert abs(decoded.time.timestamp() - SNOWFLAKE.decode(before).time.timestamp()) < 60


def test_a_copied_field_binds_its_own_generator() -> None:
    field = Event._meta.pk
    assert field is not None
    field.get_pk_value_on_save(Event())  # binds the snowflake generator
    copied = copy.deepcopy(field)
    with override_settings(IDFIELDS={"NODE_SOURCE": "static", "NODE": 3, "LAYOUT": "traceid"}):
        value = copied.get_pk_value_on_save(Event())
    assert TRACEID.decode(value).values["node_no"] == 3
