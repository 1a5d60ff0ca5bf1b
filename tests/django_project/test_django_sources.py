"""Other ID sources behind the fields: IDFIELDS["GENERATORS"] names a factory per layout."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import override_settings

from idfields.errors import LayoutError
from idfields.generators import make_generator
from idfields.hostshared import HostSharedGenerator
from idfields.layouts import SNOWFLAKE
from tests.django_project.conftest import ALIASES
from tests.django_project.testapp.models import Author

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
