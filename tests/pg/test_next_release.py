"""A project's migrations across a simulated next release whose layout renderer renders one byte
differently: a migration file Django's writer wrote today still imports (so ``showmigrations``,
``makemigrations`` and test-database setup work), and replays on a fresh database exactly what it
installed when it was written."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from databases import DbUrl
from django.db import migrations
from django.db.migrations.writer import MigrationWriter

from idfields import sql
from idfields.layouts import Layout, Node, Sequence, Timestamp
from idfields.migrations.django import InstallIdFunctions, InstallLayoutFunctions
from idfields.sql.layouts import render_layout_function
from tests.next_release import next_release_renderer
from tests.pg.conftest import TABLES

__all__ = ["next_release_renderer"]  # a fixture, for the test below

ORDERS = Layout("orders", [Timestamp(41, unit="ms"), Node(8), Sequence(14)])
APP = "testapp"
PACKAGE = "next_release_migrations"


def write_migration(folder: Path) -> str:
    """Today's writer: the migration file ``makemigrations`` would write for these operations."""
    migration = migrations.Migration("0001_orders", APP)
    migration.initial = True
    migration.operations = [
        InstallIdFunctions(sql.VERSION, lease_schema="public"),
        InstallLayoutFunctions(layout=ORDERS),
    ]
    package = folder / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "0001_orders.py").write_text(MigrationWriter(migration).as_string())
    return render_layout_function(ORDERS)[0]


def installed_body(url: DbUrl) -> str:
    """The body of ``issue_orders()`` as installed (PL/pgSQL keeps its text verbatim)."""
    with psycopg.connect(**url.psycopg_kwargs()) as conn:
        row = conn.execute(
            "SELECT prosrc FROM pg_proc WHERE oid = 'idfields.issue_orders(regclass)'::regprocedure"
        ).fetchone()
    assert row is not None
    return str(row[0])


@pytest.fixture
def alias(empty_database: DbUrl, django_db_blocker: Any) -> Iterator[str]:
    """A database alias of its own on the empty database, for ``manage.py`` commands."""
    from django.db import connections

    name = "next_release"
    config = empty_database.django_databases()["default"]
    connections.settings[name] = connections.configure_settings({"default": {}, name: config})[name]
    with django_db_blocker.unblock():
        try:
            yield name
        finally:
            connections[name].close()
            del connections[name]
            del connections.settings[name]


def test_a_migration_written_today_imports_and_replays_after_the_renderer_changed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    alias: str,
    empty_database: DbUrl,
) -> None:
    from django.core.management import call_command
    from django.test import override_settings

    written = write_migration(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, PACKAGE, raising=False)
    request.getfixturevalue("next_release_renderer")
    rendered = render_layout_function(ORDERS)[0]

    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as conn:
        conn.execute(TABLES)
    shown = io.StringIO()
    with override_settings(MIGRATION_MODULES={APP: PACKAGE}):
        call_command("migrate", APP, "0001_orders", database=alias, verbosity=0)
        call_command("showmigrations", APP, database=alias, stdout=shown)
    assert "[X] 0001_orders" in shown.getvalue()
    # What the migration installed when it was written, not the next release's rendering.
    body = installed_body(empty_database)
    assert body in written and body not in rendered
