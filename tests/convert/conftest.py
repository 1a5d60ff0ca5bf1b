"""Connections to the scratch servers, and a schema of a key with a foreign key and an M2M."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pymysql  # type: ignore[import-untyped,unused-ignore]
import pytest
from databases import DbUrl
from schema_ddl import create_tables

from tests.convert.djapp.harness import ConvApp

Rows = list[tuple[Any, ...]]


@pytest.fixture
def pg(postgres_url: str) -> Iterator[Callable[..., Rows]]:
    """``pg(sql, *params) -> rows`` on an autocommit connection; tables made are dropped after."""
    with psycopg.connect(**DbUrl.parse(postgres_url).psycopg_kwargs(), autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS conv CASCADE")
        conn.execute("CREATE SCHEMA conv")

        def run(sql: str, *params: object) -> Rows:
            cursor = conn.execute(sql, params or None)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

        yield run
        conn.execute("DROP SCHEMA conv CASCADE")


@pytest.fixture
def id_functions(pg: Callable[..., Rows]) -> Iterator[None]:
    """The PL/pgSQL ID functions (``generation="db"``) and the tables they use (leases, and the
    counters where they record the database's identity and epochs); the
    functions go after, with the user-layout functions other suites installed on top of them
    (the pg suite's fixture installs them again when it finds them gone)."""
    from idfields import sql

    for table in create_tables("postgresql", "idfields_node_lease", "idfields_counter"):
        pg(table)
    pg(sql.load(sql.VERSION))
    yield
    pg("DROP SCHEMA conv CASCADE")  # the tables whose defaults call the functions
    pg("CREATE SCHEMA conv")
    pg("DROP SCHEMA IF EXISTS idfields CASCADE")


@pytest.fixture
def my(mysql_url: str) -> Iterator[Callable[..., Rows]]:
    """``my(sql, *params) -> rows`` on an autocommit PyMySQL connection."""
    conn = pymysql.connect(**DbUrl.parse(mysql_url).pymysql_kwargs(), autocommit=True)
    tables = ("conv tag`s", "conv_child", "conv`parent")

    def drop() -> None:
        with conn.cursor() as cursor:
            cursor.execute("SET foreign_key_checks = 0")
            for name in tables:
                cursor.execute("DROP TABLE IF EXISTS `{}`".format(name.replace("`", "``")))
            cursor.execute("SET foreign_key_checks = 1")

    def run(sql: str, *params: object) -> Rows:
        with conn.cursor() as cursor:
            cursor.execute(sql, params or None)
            return list(cursor.fetchall())

    drop()
    yield run
    drop()
    conn.close()


_CONVAPP_TABLES = ("child", "parent_tags", "parent", "tag", "account")
# gfkapp's migration brings contenttypes' table into the session database: it goes too.
_TABLES = (
    *(f"convapp_{table}" for table in _CONVAPP_TABLES),
    "gfkapp_taggednote",
    "gfkapp_taggeditem",
    "django_content_type",
)


@pytest.fixture
def convapp(
    request: pytest.FixtureRequest, django_db_blocker: Any, tmp_path: Path
) -> Iterator[ConvApp]:
    """Parametrized with (vendor, migrations module): ``convapp`` installed, its tables dropped
    after. Its own alias on the session's scratch database (SQLite: a file of the test's own);
    node 7 for the app-side IDs."""
    from django.db import connections
    from django.test import override_settings

    vendor, migrations = request.param
    alias = f"convert_{vendor}"
    if vendor == "sqlite":
        config = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "conv.sqlite3")}
    else:
        url = request.getfixturevalue("postgres_url" if vendor == "postgresql" else "mysql_url")
        config = DbUrl.parse(url).django_databases()["default"]
    connections.settings[alias] = connections.configure_settings({"default": {}, alias: config})[
        alias
    ]
    settings = override_settings(
        INSTALLED_APPS=[
            *django_settings().INSTALLED_APPS,
            "tests.convert.djapp",
            "tests.convert.gfkapp",
        ],
        MIGRATION_MODULES={"convapp": f"tests.convert.djapp.{migrations}"},
        IDFIELDS={"NODE_SOURCE": "static", "NODE": 7},
    )
    with django_db_blocker.unblock(), settings:
        app = ConvApp(alias)
        try:
            yield app
        finally:
            if vendor != "sqlite":  # the file goes with tmp_path
                drop_tables(app, vendor)
            app.connection.close()
            del connections[alias]
            del connections.settings[alias]


def drop_tables(app: ConvApp, vendor: str) -> None:
    drop = ", ".join(app.connection.ops.quote_name(table) for table in _TABLES)
    with app.connection.cursor() as cursor:
        if vendor == "mysql":
            cursor.execute("SET foreign_key_checks = 0")
        cursor.execute(f"DROP TABLE IF EXISTS {drop}")
        if vendor == "mysql":
            cursor.execute("SET foreign_key_checks = 1")
        cursor.execute(
            "DELETE FROM django_migrations WHERE app IN ('convapp', 'gfkapp', 'contenttypes')"
        )


def django_settings() -> Any:
    from django.conf import settings

    return settings
