"""Leases meet the life of connections: their own connection (uncounted), test databases
(released before a drop), and in-memory SQLite (no lease at all)."""

from __future__ import annotations

import pytest
from django.db import connections
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from idfields.django_app.lifecycle import on_connection
from idfields.django_app.sources import (
    PrivateDatabaseNode,
    coordination_database,
    generator_for,
    node_source,
    reset,
)
from idfields.layouts import DECIMAL, SNOWFLAKE
from tests.django_project.testapp.models import Author


@pytest.mark.django_db
def test_lease_queries_are_not_counted_by_assert_num_queries() -> None:
    reset()  # no node now: the next ID claims one
    with CaptureQueriesContext(connections["default"]) as queries:
        Author.objects.create(name="first after reset")
    assert [q["sql"].split()[0] for q in queries] == ["INSERT"]
    assert generator_for("snowflake").node is not None  # claimed on a connection of its own


@pytest.mark.django_db
def test_a_connection_without_a_database_name_hands_the_nodes_back_first() -> None:
    """Django's creation opens one to create, clone or drop a test database: PostgreSQL's DROP
    DATABASE would refuse while our private connection is on it."""
    Author.objects.create(name="leased")  # the node is leased on the private connection
    database = coordination_database("default")
    assert database.database_name == connections["default"].settings_dict["NAME"]
    generator = generator_for("snowflake")
    with connections["default"]._nodb_cursor():  # what create/clone/destroy_test_db open first
        pass
    assert database._wrapper is not None and database._wrapper.connection is None  # closed
    assert coordination_database("default") is not database
    assert generator_for("snowflake") is not generator  # the next ID leases afresh


@pytest.mark.django_db
def test_an_alias_switched_to_another_database_hands_the_nodes_back() -> None:
    """A runner points the alias at its test database (or back): the lease lives in the other."""
    Author.objects.create(name="leased")
    generator = generator_for("snowflake")
    connection = connections["default"]
    name = connection.settings_dict["NAME"]
    try:
        connection.close()
        connection.settings_dict["NAME"] = "idfields_elsewhere"  # closed again before it opens
        on_connection(connection=connection)
    finally:
        connection.settings_dict["NAME"] = name
    assert generator_for("snowflake") is not generator


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
