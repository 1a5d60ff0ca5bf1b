"""A Django project one step off the documented path gets one message that names the fix.

Each case is a small project run in a subprocess, as a user's would be, on SQLite, PostgreSQL
and MariaDB: ``idfields.django_app`` left out of ``INSTALLED_APPS`` (``check`` says so through
the field's own check, which runs for every model even when the app is not installed; and the
first ``create()`` says so if checks were skipped), and the idfields app left unmigrated
(``migrate shop`` alone: the first ``create()`` names ``migrate idfields``), and a DecimalId
project with no launch recorded (``check --database`` names ``idfields_launch``). On PostgreSQL,
a migrating role without CREATE ON DATABASE is told the grant (installing the database functions
runs CREATE SCHEMA idfields), or to set ``IDFIELDS["DATABASE_FUNCTIONS"] = False``, with which
the same role migrates and the project makes its IDs in Python.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from databases import DbUrl
from psycopg import sql as pgsql

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

MODELS = """\
from django.db import models


class Order(models.Model):
    note = models.CharField(max_length=100)
"""
CREATE = "from shop.models import Order; print(Order.objects.create(note='a').pk)"


def make_project(
    path: Path, database: dict[str, object], apps: list[str], key: str = "SnowflakeAutoField"
) -> None:
    (path / "shop" / "migrations").mkdir(parents=True)
    (path / "shop" / "__init__.py").write_text("")
    (path / "shop" / "migrations" / "__init__.py").write_text("")
    (path / "shop" / "models.py").write_text(MODELS)
    (path / "settings.py").write_text(
        "import pymysql\npymysql.install_as_MySQLdb()\n"
        "SECRET_KEY = 'x'\nUSE_TZ = True\n"
        f"INSTALLED_APPS = {apps!r}\n"
        f"DEFAULT_AUTO_FIELD = 'idfields.django_app.fields.{key}'\n"
        f"DATABASES = {{'default': {database!r}}}\n"
    )
    (path / "manage.py").write_text(
        "import sys\nfrom django.core.management import execute_from_command_line\n"
        "execute_from_command_line(sys.argv)\n"
    )


def manage(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IDFIELDS_", "DJANGO_"))}
    env.update(DJANGO_SETTINGS_MODULE="settings", PYTHONPATH=f"{path}{os.pathsep}{ROOT}")
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def steps(path: Path, *commands: tuple[str, ...]) -> None:
    """Run each ``manage.py`` command; each must succeed."""
    for command in commands:
        done = manage(path, *command)
        assert done.returncode == 0, f"{command}: {done.stderr}"


def first_id_fails(path: Path) -> str:
    """The last line of the traceback of the project's first ``create()``, which must fail."""
    first = manage(path, "shell", "-c", CREATE)
    assert first.returncode != 0, first.stdout
    last = first.stderr.strip().splitlines()[-1]
    assert last.startswith("idfields.errors.TablesMissing: table idfields_"), first.stderr
    return last


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def database(
    request: pytest.FixtureRequest, tmp_path: Path, fresh_database: Callable[[str], str]
) -> dict[str, object]:
    if request.param == "sqlite":
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "db.sqlite3")}
    return DbUrl.parse(fresh_database(request.param)).django_databases()["default"]


def test_a_project_without_the_idfields_app_is_told_to_add_it(
    tmp_path: Path, database: dict[str, object]
) -> None:
    make_project(tmp_path, database, ["shop"])
    check = manage(tmp_path, "check")
    assert check.returncode != 0, check.stdout
    assert "idfields.E032" in check.stderr and "INSTALLED_APPS" in check.stderr, check.stderr
    assert "'idfields.django_app'" in check.stderr
    steps(tmp_path, ("makemigrations", "shop", "--skip-checks"), ("migrate", "--skip-checks"))
    last = first_id_fails(tmp_path)
    assert "add 'idfields.django_app' to INSTALLED_APPS" in last, last
    assert "manage.py migrate idfields" in last, last


def test_an_unmigrated_idfields_app_is_told_to_migrate_it(
    tmp_path: Path, database: dict[str, object]
) -> None:
    make_project(tmp_path, database, ["idfields.django_app", "shop"])
    steps(tmp_path, ("check",), ("makemigrations", "shop"), ("migrate", "shop"))
    last = first_id_fails(tmp_path)
    assert "run 'python manage.py migrate idfields'" in last, last
    assert "INSTALLED_APPS" not in last, last
    assert manage(tmp_path, "migrate", "idfields").returncode == 0
    again = manage(tmp_path, "shell", "-c", CREATE)
    assert again.returncode == 0 and int(again.stdout.split()[-1]) > 2**40, again.stderr


# A data migration that makes rows keyed by our IDs, in the project's first ``migrate``: the
# idfields tables appear during that very run, inside no transaction the lease could wait for.
DATA_MIGRATION = """\
from django.db import migrations


def forwards(apps, schema_editor):
    Order = apps.get_model("shop", "Order")
    for note in ("a", "b", "c"):
        Order.objects.create(note=note)


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]
    operations = [migrations.RunPython(forwards)]
"""
COUNT = "from shop.models import Order; print(sorted(Order.objects.values_list('pk', flat=True)))"


def test_a_data_migration_issues_ids_in_the_first_migrate(
    tmp_path: Path, database: dict[str, object]
) -> None:
    make_project(tmp_path, database, ["idfields.django_app", "shop"])
    steps(tmp_path, ("makemigrations", "shop"))
    (tmp_path / "shop" / "migrations" / "0002_rows.py").write_text(DATA_MIGRATION)
    steps(tmp_path, ("migrate",))
    listed = manage(tmp_path, "shell", "-c", COUNT)
    assert listed.returncode == 0, listed.stderr
    ids = json.loads(listed.stdout.strip().splitlines()[-1])
    assert len(set(ids)) == 3 and min(ids) > 2**40, ids


def test_a_decimalid_project_without_a_launch_fails_check(
    tmp_path: Path, database: dict[str, object]
) -> None:
    make_project(tmp_path, database, ["idfields.django_app", "shop"], "DecimalIdAutoField")
    steps(tmp_path, ("makemigrations", "shop"), ("migrate",))
    check = manage(tmp_path, "check", "--database", "default")
    assert check.returncode != 0, check.stdout
    assert "idfields.E040" in check.stderr and "idfields_launch" in check.stderr, check.stderr
    assert manage(tmp_path, "idfields_launch", "--label", "v1").returncode == 0
    again = manage(tmp_path, "check", "--database", "default")
    assert again.returncode == 0, again.stderr
    made = manage(tmp_path, "shell", "-c", CREATE)
    assert made.returncode == 0 and int(made.stdout.split()[-1]) > 0, made.stderr


@pytest.fixture
def migrator(fresh_database: Callable[[str], str]) -> Iterator[tuple[dict[str, object], DbUrl]]:
    """Django's DATABASES entry for a login role that may create tables in schema public of a
    new database but holds no CREATE ON DATABASE (so no CREATE SCHEMA): a managed database's
    usual migration role."""
    url = DbUrl.parse(fresh_database("postgresql"))
    role = f"idfields_migrator_{secrets.token_hex(3)}"
    with psycopg.connect(**url.psycopg_kwargs(), autocommit=True) as admin:
        admin.execute(pgsql.SQL("CREATE ROLE {} LOGIN").format(pgsql.Identifier(role)))
        admin.execute(
            pgsql.SQL("GRANT CREATE, USAGE ON SCHEMA public TO {}").format(pgsql.Identifier(role))
        )
        database = url.django_databases()["default"]
        yield {**database, "USER": role, "PASSWORD": ""}, url
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", [role]
        )
        admin.execute(pgsql.SQL("DROP OWNED BY {}").format(pgsql.Identifier(role)))
        admin.execute(pgsql.SQL("DROP ROLE {}").format(pgsql.Identifier(role)))


@pytest.mark.postgres
def test_a_role_without_create_on_database_is_told_the_grant(
    tmp_path: Path, migrator: tuple[dict[str, object], DbUrl]
) -> None:
    database, _ = migrator
    make_project(tmp_path, database, ["idfields.django_app", "shop"])
    migrated = manage(tmp_path, "migrate")
    assert migrated.returncode != 0
    last = migrated.stderr.strip().splitlines()[-1]
    assert last.startswith("idfields.errors.MissingPrivilege: "), migrated.stderr
    assert "CREATE SCHEMA idfields needs CREATE ON DATABASE" in last, last
    assert f"GRANT CREATE ON DATABASE {database['NAME']} TO {database['USER']}" in last, last
    assert "IDFIELDS['DATABASE_FUNCTIONS'] = False" in last, last


@pytest.mark.postgres
def test_python_only_ids_need_no_create_on_database(
    tmp_path: Path, migrator: tuple[dict[str, object], DbUrl]
) -> None:
    database, url = migrator
    make_project(tmp_path, database, ["idfields.django_app", "shop"])
    with (tmp_path / "settings.py").open("a") as settings:
        settings.write("IDFIELDS = {'DATABASE_FUNCTIONS': False}\n")
    steps(tmp_path, ("check",), ("makemigrations", "shop"), ("migrate",))
    made = manage(tmp_path, "shell", "-c", CREATE)
    assert made.returncode == 0 and int(made.stdout.split()[-1]) > 2**40, made.stderr
    with psycopg.connect(**url.psycopg_kwargs()) as conn:
        schemas = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'idfields'").fetchall()
    assert schemas == []
