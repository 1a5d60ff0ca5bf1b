"""A user's own Django project, made exactly as the Django tutorial says, passes its own tests.

The ``sh`` blocks of docs/tutorials/django.md run as written (``pip install`` aside: this
environment has the package) in a fresh directory: ``django-admin startproject``, ``startapp``,
the settings, ``migrate``, then the project's own tests with Django's runner and pytest-django
on SQLite, which assert that the first key is a snowflake ID (> 2**40) and that a user keeps its
groups (contrib.auth's link tables, made by ``migrate``). The same suite then runs
on PostgreSQL and MariaDB, and the test database must be gone afterwards (PostgreSQL refused to
drop it while the lease connection was open). Each run is a subprocess, as a user's would be.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pymysql  # type: ignore[import-untyped,unused-ignore]
import pytest
from databases import DbUrl

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "docs" / "tutorials" / "django.md"
pytestmark = pytest.mark.slow


def readme_django_blocks() -> list[str]:
    """The ``sh`` blocks of the Django tutorial, without ``pip install`` lines."""
    blocks = re.findall(r"^```sh\n(.*?)^```", TUTORIAL.read_text(), flags=re.M | re.S)
    return [
        "\n".join(line for line in block.splitlines() if not line.startswith("pip install"))
        for block in blocks
    ]


def run(cwd: Path, script: str) -> str:
    """``script`` in bash, as a user's shell in the project would run it; its output."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("IDFIELDS_", "DJANGO_", "PYTEST_"))
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(ROOT)  # this checkout's idfields, as if pip-installed
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{script}\n--- exit {done.returncode}:\n{output}"
    return output


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project after the tutorial's set-up block (startproject ... migrate)."""
    if shutil.which("django-admin", path=str(Path(sys.executable).parent)) is None:
        pytest.fail("django-admin is not installed next to this Python")
    path = tmp_path_factory.mktemp("userproject")
    setup = "\n".join(readme_django_blocks()[1:3])  # the project, then taggit's widening
    first_pk = int(run(path, setup).split()[-1])
    assert first_pk > 2**40  # a snowflake ID, not BigAutoField's 1
    return path


def test_the_readme_steps_give_snowflake_keys_and_a_green_suite_on_sqlite(project: Path) -> None:
    assert "no issues" in run(project, "python manage.py check")  # W010 gone with the line
    suite = readme_django_blocks()[-1]  # "Its tests"
    output = run(project, suite)
    assert "Ran 4 tests" in output and "\nOK" in output  # Django's runner
    assert "4 passed" in output  # pytest-django


def test_w010_names_an_app_that_startapp_pinned_to_bigautofield(project: Path) -> None:
    shutil.copy(project / "shop" / "apps.py.bak", project / "shop" / "apps.py")
    try:
        output = run(project, "python manage.py check")
    finally:
        (project / "shop" / "apps.py").write_text(
            (project / "shop" / "apps.py.bak")
            .read_text()
            .replace("    default_auto_field = 'django.db.models.BigAutoField'\n", "")
        )
    assert "idfields.W010" in output and "shop" in output and "default_auto_field" in output


TRANSACTION_TESTS = """
from django.contrib.auth.models import Group
from django.db import transaction
from django.test import TestCase, TransactionTestCase

from shop.models import Order


class WriteFirst(TestCase):
    def test_a_write_before_the_first_id(self):
        Group.objects.create(name="first")  # a write: this transaction holds SQLite's lock
        self.assertGreater(Order.objects.create(note="a").pk, 2**40)


class InsideAtomic(TransactionTestCase):
    def test_first_id_inside_atomic_after_a_write(self):
        with transaction.atomic():
            Group.objects.create(name="first")
            self.assertGreater(Order.objects.create(note="a").pk, 2**40)
"""


@pytest.mark.parametrize("test_database", ["in-memory", "file"])
def test_a_write_before_the_first_id_on_sqlite(project: Path, test_database: str) -> None:
    """SQLite has one writer: the lease must not be claimed inside the test's transaction."""
    module = project / "shop" / "test_transactions.py"
    module.write_text(TRANSACTION_TESTS)
    settings = project / "mysite" / "settings.py"
    original = settings.read_text()
    if test_database == "file":
        settings.write_text(original + "DATABASES['default']['TEST'] = {'NAME': 'test.sqlite3'}\n")
    try:
        output = run(project, "python manage.py test shop.test_transactions")
    finally:
        settings.write_text(original)
        module.unlink()
    assert "Ran 2 tests" in output and "\nOK" in output
    assert not (project / "test.sqlite3").exists()


ATOMIC_SCRIPT = """
import time
from django.contrib.auth.models import Group
from django.db import transaction
from idfields.django_app import sources
from shop.models import Order

started = time.monotonic()
with transaction.atomic():  # the leases were claimed when the connection opened
    Group.objects.create(name="a write: this transaction holds SQLite's write lock")
    print("first", Order.objects.create(note="in a transaction").pk)
sources.reset()  # the node goes back: the next ID must claim one, inside the transaction
with transaction.atomic():
    Group.objects.create(name="another write")
    try:
        Order.objects.create(note="needs a lease")
    except Exception as error:
        print(type(error).__name__, error)
print("seconds", round(time.monotonic() - started, 1))
"""


def test_a_sqlite_file_outside_tests_claims_before_the_transaction(project: Path) -> None:
    """No 5 s hang and no bare 'database is locked': claimed early, or refused by name."""
    (project / "atomic_script.py").write_text(ATOMIC_SCRIPT)
    try:
        output = run(project, "python manage.py shell < atomic_script.py")
    finally:
        (project / "atomic_script.py").unlink()
    assert int(output.split("first ")[1].split()[0]) > 2**40
    assert "SQLiteTransactionOpen" in output and "inside a transaction" in output
    assert float(output.split("seconds ")[1].split()[0]) < 4


REQUESTS_SCRIPT = """
import time
from django.contrib.auth.models import Group
from django.db import connection, transaction
from shop.models import Order

for request in range(5):  # as with ATOMIC_REQUESTS: a connection per request, one transaction
    connection.close()
    with transaction.atomic():
        Group.objects.create(name=f"request {request}")
        Order.objects.create(note="inside the request's transaction")
    time.sleep(0.5)  # past the renewal time (ttl / 3); 2.5 s in all, the lease lives 1 s
print("requests ok")
"""


def test_leases_on_a_sqlite_file_are_renewed_as_connections_open(project: Path) -> None:
    """Every ID inside a transaction: renewals happen when each request's connection opens."""
    (project / "requests_script.py").write_text(REQUESTS_SCRIPT)
    settings = project / "mysite" / "settings.py"
    original = settings.read_text()
    settings.write_text(original + "IDFIELDS = {'LEASE_TTL': 1}\n")
    try:
        output = run(project, "python manage.py shell < requests_script.py")
    finally:
        settings.write_text(original)
        (project / "requests_script.py").unlink()
    assert "requests ok" in output


def on_server(project: Path, url: str) -> str:
    """The tutorial's test block (both runners) with ``DATABASES`` pointed at ``url``."""
    database = DbUrl.parse(url).django_databases()["default"]
    settings = project / "mysite" / "settings.py"
    original = settings.read_text()
    settings.write_text(
        original
        + "import pymysql\npymysql.install_as_MySQLdb()\n"
        + f"DATABASES = {{'default': {database!r}}}\n"
    )
    try:
        return run(project, readme_django_blocks()[-1])
    finally:
        settings.write_text(original)


@pytest.mark.postgres
def test_the_suite_passes_on_postgresql_and_leaves_no_test_database(
    project: Path, fresh_database: Any
) -> None:
    postgres_url = fresh_database("postgresql")  # its own: the session's test_* is taken
    output = on_server(project, postgres_url)
    assert "\nOK" in output and "4 passed" in output
    server = DbUrl.parse(postgres_url)
    with psycopg.connect(**server.psycopg_kwargs()) as conn:
        left = conn.execute(
            "SELECT datname FROM pg_database WHERE datname = %s", [f"test_{server.database}"]
        ).fetchall()
    assert left == []


@pytest.mark.mysql
def test_the_suite_passes_on_mariadb_and_leaves_no_test_database(
    project: Path, fresh_database: Any
) -> None:
    mysql_url = fresh_database("mysql")
    output = on_server(project, mysql_url)
    assert "\nOK" in output and "4 passed" in output
    server = DbUrl.parse(mysql_url)
    with pymysql.connect(**server.pymysql_kwargs()) as conn, conn.cursor() as cursor:
        cursor.execute("SHOW DATABASES LIKE %s", [f"test_{server.database}"])
        assert cursor.fetchall() == ()


@pytest.mark.postgres
def test_switching_an_autofield_project_migrates_in_one_go_on_postgresql(
    tmp_path: Path, fresh_database: Any
) -> None:
    """A project made under AutoField has an int4 ``django_migrations.id``; switching to our
    field must not overflow it while recording ``idfields.0001_initial`` half-way."""
    url = fresh_database("postgresql")
    database = DbUrl.parse(url).django_databases()["default"]
    run(tmp_path, "django-admin startproject mysite . && python manage.py startapp shop")
    (tmp_path / "shop" / "models.py").write_text(
        "from django.db import models\n\n\nclass Order(models.Model):\n"
        "    note = models.CharField(max_length=100)\n"
    )
    settings = tmp_path / "mysite" / "settings.py"
    settings.write_text(
        settings.read_text()
        + "INSTALLED_APPS += ['shop']\nDEFAULT_AUTO_FIELD = 'django.db.models.AutoField'\n"
        + f"DATABASES = {{'default': {database!r}}}\n"
    )
    apps_py = tmp_path / "shop" / "apps.py"
    apps_py.write_text(apps_py.read_text().replace("default_auto_field", "# default_auto_field"))
    run(tmp_path, "python manage.py makemigrations shop && python manage.py migrate")
    settings.write_text(  # the tutorial's two lines
        settings.read_text()
        + "INSTALLED_APPS += ['idfields.django_app']\n"
        + "DEFAULT_AUTO_FIELD = 'idfields.django_app.fields.SnowflakeAutoField'\n"
    )
    run(tmp_path, "python manage.py makemigrations shop && python manage.py migrate")
    shown = run(tmp_path, "python manage.py showmigrations idfields")
    assert "[X] 0001_initial" in shown
    made = run(
        tmp_path,
        'python manage.py shell -c "from shop.models import Order; '
        "print(Order.objects.create(note='a').pk)\"",
    )
    assert int(made.split()[-1]) > 2**40
    with psycopg.connect(**DbUrl.parse(url).psycopg_kwargs()) as conn:
        [(kind,)] = conn.execute(
            "SELECT data_type FROM information_schema.columns "
            "WHERE table_name = 'django_migrations' AND column_name = 'id'"
        ).fetchall()
    assert kind == "integer"  # left as it was: the database numbers the log
