"""Node ranges over ``DATABASES``: ``manage.py idfields_ranges`` and the ``idfields.W041`` check
read the range each PostgreSQL alias records and name the first two aliases sharing nodes;
aliases reaching one database count once."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any

import databases
import psycopg
import pytest
from databases import DbUrl
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connections

from idfields import sql
from idfields.django_app.checks import check_node_ranges
from idfields.django_app.noderanges import alias_ranges
from idfields.sql.noderange import WHOLE
from tests.pg.conftest import TABLES

pytestmark = pytest.mark.postgres

RANGES = {"shard_a": range(0, 512), "shard_b": range(512, 1024)}


@pytest.fixture
def shards(postgres_url: str, django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """Aliases shard_a and shard_b (two new databases, disjoint ranges) and replica_a (a second
    alias of shard_a's database), beside the project's own (its test databases made and
    migrated: default issues on every node)."""
    added = ["shard_a", "shard_b", "replica_a"]
    with contextlib.ExitStack() as stack:
        urls = {}
        for alias, nodes in RANGES.items():
            urls[alias] = stack.enter_context(databases.scratch_database(postgres_url))
            with psycopg.connect(urls[alias], autocommit=True) as conn:
                conn.execute(TABLES)
                conn.execute(sql.load(sql.VERSION, nodes=nodes).encode())
        urls["replica_a"] = urls["shard_a"]
        configured = connections.configure_settings(
            {
                "default": settings.DATABASES["default"],
                **{
                    alias: DbUrl.parse(urls[alias]).django_databases()["default"] for alias in added
                },
            }
        )
        for alias in added:
            settings.DATABASES[alias] = configured[alias]
            connections.settings[alias] = configured[alias]
        try:
            with django_db_blocker.unblock():  # the shards are no test databases of Django's
                yield
        finally:
            for alias in added:
                connections[alias].close()
                del connections[alias]
                connections.settings.pop(alias, None)  # the same dict, once configured
                settings.DATABASES.pop(alias, None)


@pytest.mark.django_db  # also makes the project's test databases when this file runs alone
def test_the_project_database_issues_on_every_node() -> None:
    assert alias_ranges(["default", "sqlite"]) == {"default": WHOLE}


def ranges(*aliases: str) -> str:
    out = io.StringIO()
    call_command("idfields_ranges", *aliases, stdout=out)
    return out.getvalue()


@pytest.mark.usefixtures("shards")
def test_the_command_lists_disjoint_ranges_and_counts_a_database_once() -> None:
    out = ranges("shard_a", "replica_a", "shard_b")
    assert "shard_a: nodes 0-511" in out and "shard_b: nodes 512-1023" in out
    assert "replica_a" not in out
    assert out.endswith("No two databases share a node.\n")


@pytest.mark.usefixtures("shards")
def test_the_command_fails_naming_the_aliases_that_share_nodes() -> None:
    with pytest.raises(CommandError, match=r"default \(all nodes\) and shard_a \(nodes 0-511\)"):
        ranges()  # every alias: the project's default database issues on every node
    with pytest.raises(CommandError, match="no database alias 'nowhere'"):
        ranges("nowhere")


@pytest.mark.usefixtures("shards")
def test_the_check_names_two_aliases_sharing_a_range() -> None:
    assert check_node_ranges(databases=["shard_a", "replica_a", "shard_b"]) == []
    (error,) = check_node_ranges(databases=["shard_b", "default"])
    assert error.id == "idfields.W041"
    assert "shard_b (nodes 512-1023) and default (all nodes) share nodes 512-1023" in error.msg
    assert "nodes=range(a, b)" in (error.hint or "")
