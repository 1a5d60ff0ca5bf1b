"""Installing the SQL functions: the Django operation and the Alembic operation, on PostgreSQL
(online, and as collected/offline SQL) and as a no-op elsewhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import alembic_env
import psycopg
import pytest
from alembic import command
from databases import DbUrl

from idfields import sql
from tests.pg.conftest import TABLES

APP = "idfields_tests"


def installed(url: DbUrl) -> bool:
    with psycopg.connect(**url.psycopg_kwargs()) as conn:
        found = conn.execute("SELECT to_regprocedure('idfields.next_snowflake()')").fetchone()
    return found is not None and found[0] is not None


def idfields_objects(url: DbUrl) -> set[str]:
    """Every function and relation in schema idfields (empty when the schema is gone)."""
    with psycopg.connect(**url.psycopg_kwargs()) as conn:
        rows = conn.execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc AS p "
            "WHERE p.pronamespace = to_regnamespace('idfields') "
            "UNION ALL SELECT c.oid::regclass::text FROM pg_class AS c "
            "WHERE c.relnamespace = to_regnamespace('idfields')"
        ).fetchall()
    return {row[0] for row in rows}


def schema_exists(url: DbUrl) -> bool:
    with psycopg.connect(**url.psycopg_kwargs()) as conn:
        row = conn.execute("SELECT to_regnamespace('idfields')").fetchone()
    return row is not None and row[0] is not None


def generates(url: DbUrl) -> list[int]:
    with psycopg.connect(**url.psycopg_kwargs(), autocommit=True) as conn:
        conn.execute(TABLES)
        rows = conn.execute(
            "SELECT idfields.next_snowflake() FROM generate_series(1, 100)"
        ).fetchall()
    return [row[0] for row in rows]


# --- Django -------------------------------------------------------------------------------


@pytest.fixture
def django_connection(empty_database: DbUrl, django_db_blocker: Any) -> Iterator[Any]:
    """A Django connection to the empty database, beside the test project's aliases (Django's
    settings are the project's, tests/django_project/settings.py, through pytest-django)."""
    from django.db.utils import ConnectionHandler

    handler = ConnectionHandler(empty_database.django_databases())  # a private "default"
    with django_db_blocker.unblock():
        connection = handler["default"]
        yield connection
        connection.close()


def run(connection: Any, operation: Any, direction: str, collect: bool = False) -> list[str]:
    from django.db.migrations.state import ProjectState

    method = getattr(operation, f"database_{direction}")
    # atomic=False: an atomic editor would look its alias up in the project's connections.
    with connection.schema_editor(collect_sql=collect, atomic=False) as editor:
        method(APP, editor, ProjectState(), ProjectState())
    return list(editor.collected_sql) if collect else []


def test_django_install_then_reverse_drops_everything(
    django_connection: Any, empty_database: DbUrl
) -> None:
    from django.db.utils import InternalError

    from idfields.migrations.django import InstallIdFunctions

    operation = InstallIdFunctions(sql.VERSION)
    run(django_connection, operation, "forwards")
    ids = generates(empty_database)
    assert ids == sorted(set(ids))
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as conn:
        conn.execute("CREATE TABLE uses_it (id bigint DEFAULT idfields.next_snowflake())")
        with pytest.raises(InternalError, match="default value for column id of table uses_it"):
            run(django_connection, operation, "backwards")  # no CASCADE past a column default
        conn.execute("DROP TABLE uses_it")
    run(django_connection, operation, "backwards")
    assert not installed(empty_database)
    with psycopg.connect(**empty_database.psycopg_kwargs()) as conn:
        schema = conn.execute("SELECT to_regnamespace('idfields')").fetchone()
    assert schema == (None,)


def test_django_app_installs_the_functions_with_its_one_migration() -> None:
    """A fresh ``migrate idfields`` runs one migration, and one SQL file in it."""
    from importlib import import_module
    from pathlib import Path

    from idfields.migrations.django import InstallIdFunctions

    folder = Path(import_module("idfields.django_app.migrations").__file__ or "").parent
    assert sorted(p.name for p in folder.glob("0*.py")) == ["0001_initial.py"]
    initial = import_module("idfields.django_app.migrations.0001_initial").Migration
    installs = [op for op in initial.operations if isinstance(op, InstallIdFunctions)]
    assert [op.version for op in installs] == [sql.VERSION]


def test_django_collected_sql_is_the_versioned_file_and_runs(
    django_connection: Any, empty_database: DbUrl
) -> None:
    from idfields.migrations.django import InstallIdFunctions

    collected = run(django_connection, InstallIdFunctions(sql.VERSION), "forwards", collect=True)
    assert not installed(empty_database)  # collecting executes nothing
    assert collected == [sql.load(sql.VERSION, "public")]
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as conn:
        conn.execute(collected[0].encode())
    assert generates(empty_database)
    dropped = run(django_connection, InstallIdFunctions(sql.VERSION), "backwards", collect=True)
    assert dropped == [sql.load_drop(sql.VERSION)]


def test_django_operation_is_a_no_op_on_sqlite_and_where_the_router_says_no(
    django_connection: Any,
) -> None:
    from django.db.utils import ConnectionHandler
    from django.test import override_settings

    from idfields.migrations.django import InstallIdFunctions

    operation = InstallIdFunctions(sql.VERSION)
    sqlite = ConnectionHandler(
        {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
    )
    for direction in ("forwards", "backwards"):
        assert run(sqlite["default"], operation, direction, collect=True) == []
    with override_settings(DATABASE_ROUTERS=[f"{__name__}.NoIdfieldsRouter"]):
        assert run(django_connection, operation, "forwards", collect=True) == []
    assert run(django_connection, operation, "forwards", collect=True) != []


class NoIdfieldsRouter:
    """Keeps the test app's migrations off every database."""

    def allow_migrate(self, db: str, app_label: str, **hints: object) -> bool | None:
        return False if app_label == APP else None


def test_django_operation_deconstructs_and_refuses_unknown_versions() -> None:
    pytest.importorskip("django")
    from idfields.migrations.django import InstallIdFunctions

    operation = InstallIdFunctions(sql.VERSION, lease_schema="app")
    path, args, kwargs = operation.deconstruct()
    assert path == "InstallIdFunctions"  # Django's OperationWriter adds the module
    assert InstallIdFunctions(*args, **kwargs).deconstruct() == (path, args, kwargs)
    with pytest.raises(ValueError, match="has no SQL version '9999'"):
        InstallIdFunctions("9999")


# --- Alembic ------------------------------------------------------------------------------

MIGRATION = alembic_env.migration(
    f'op.install_id_functions("{sql.VERSION}", lease_schema="public")',
    f'op.drop_id_functions("{sql.VERSION}")',
)


def test_alembic_upgrade_and_downgrade_online(empty_database: DbUrl, tmp_path: Path) -> None:
    config, _ = alembic_env.alembic_config(tmp_path, empty_database.sqlalchemy_url(), MIGRATION)
    command.upgrade(config, "head")
    assert installed(empty_database)
    ids = generates(empty_database)
    assert ids == sorted(set(ids))
    command.downgrade(config, "base")
    assert not installed(empty_database)


def test_alembic_offline_sql_is_the_versioned_file_and_runs(
    empty_database: DbUrl, tmp_path: Path
) -> None:
    config, output = alembic_env.alembic_config(
        tmp_path, empty_database.sqlalchemy_url(), MIGRATION
    )
    command.upgrade(config, "head", sql=True)
    script = output.getvalue()
    assert 'CREATE OR REPLACE FUNCTION idfields."next_snowflake"()' in script
    assert "pg_temp.%I" in script and "::regclass" in script  # nothing escaped twice
    assert not installed(empty_database)
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as conn:
        conn.execute(script.encode())
    assert generates(empty_database)
    output.truncate(0)
    output.seek(0)
    command.downgrade(config, "0001:base", sql=True)
    assert 'DROP FUNCTION IF EXISTS idfields."next_snowflake"();' in output.getvalue()


def test_alembic_ops_reverse_each_other() -> None:
    from idfields.migrations.alembic._functions import DropIdFunctionsOp, InstallIdFunctionsOp

    install = InstallIdFunctionsOp(sql.VERSION)
    assert isinstance(install.reverse(), DropIdFunctionsOp)
    assert isinstance(install.reverse().reverse(), InstallIdFunctionsOp)
    with pytest.raises(ValueError, match="no SQL version '9999'"):
        InstallIdFunctionsOp("9999")


def test_alembic_offline_install_without_a_schema_is_refused(
    empty_database: DbUrl, tmp_path: Path
) -> None:
    unnamed = alembic_env.migration(f'op.install_id_functions("{sql.VERSION}")', "pass")
    config, _ = alembic_env.alembic_config(tmp_path, empty_database.sqlalchemy_url(), unnamed)
    with pytest.raises(ValueError, match="pass lease_schema="):
        command.upgrade(config, "head", sql=True)
