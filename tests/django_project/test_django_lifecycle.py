"""Leases meet the life of connections: their own connection (uncounted), test databases
(released before a drop), and in-memory SQLite (no lease at all)."""

from __future__ import annotations

import pytest
from django.db import connections
from django.db.backends.base.creation import BaseDatabaseCreation
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from idfields.django_app.sources import PrivateDatabaseNode, generator_for, node_source, reset
from idfields.layouts import DECIMAL, SNOWFLAKE
from tests.django_project.testapp.models import Author


@pytest.mark.django_db
def test_lease_queries_are_not_counted_by_assert_num_queries() -> None:
    reset()  # no node now: the next ID claims one
    with CaptureQueriesContext(connections["default"]) as queries:
        Author.objects.create(name="first after reset")
    assert [q["sql"].split()[0] for q in queries] == ["INSERT"]
    assert generator_for("snowflake").node is not None  # claimed on a connection of its own


def test_test_database_creation_and_destruction_release_leases_first() -> None:
    for name in ("create_test_db", "destroy_test_db"):
        assert getattr(getattr(BaseDatabaseCreation, name), "_idfields_releases_leases", False)


def test_an_in_memory_sqlite_database_takes_no_lease() -> None:
    with override_settings(IDFIELDS={"DATABASE": "sqlite"}):  # ":memory:": private
        assert isinstance(node_source(SNOWFLAKE), PrivateDatabaseNode)
    private = PrivateDatabaseNode()
    first, second = private.acquire(DECIMAL), private.acquire(DECIMAL)
    assert first.values == {"generator_id": 0, "launch_id": 0}
    assert second.values == {"generator_id": 1, "launch_id": 0}  # a counter never restarts
    snowflake = private.acquire(SNOWFLAKE)
    assert snowflake.release is not None
    snowflake.release(10**18)
    assert private.acquire(SNOWFLAKE).not_before_ns == 10**18  # a rebuilt generator goes on
