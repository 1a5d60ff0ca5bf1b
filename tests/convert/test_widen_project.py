"""A user's project with a third-party app whose integer ``object_id`` columns hold our IDs,
driven by ``manage.py`` in subprocesses as a user drives it, on SQLite, PostgreSQL and MariaDB.

The app ("notes") has both shapes: ``Note`` (django-reversion's) is reached only through a
``GenericRelation`` of the user's model, with no GenericForeignKey anywhere; ``Tagged``
(django-taggit's) has a GenericForeignKey. Plain commands read no
database, so they must not stop on what only the database can tell; ``check --database``,
``migrate`` and the test runner read it; a ``WidenObjectId`` in the migration graph, pending
or applied, is known without one; SQLite never needs widening.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]

SETTINGS = """\
import os
from urllib.parse import urlsplit

import pymysql

pymysql.install_as_MySQLdb()
url = urlsplit(os.environ["PROJECT_DATABASE_URL"])
ENGINES = {"sqlite": "sqlite3", "postgresql": "postgresql", "mysql": "mysql"}
DATABASES = {
    "default": {
        "ENGINE": f"django.db.backends.{ENGINES[url.scheme]}",
        "NAME": url.path if url.scheme == "sqlite" else url.path[1:],
        "HOST": url.hostname or "",
        "PORT": url.port or "",
        "USER": url.username or "",
        "PASSWORD": url.password or "",
    }
}
SECRET_KEY = "widen-project"
USE_TZ = True
INSTALLED_APPS = ["django.contrib.contenttypes", "idfields.django_app", "notes", "shop"]
DEFAULT_AUTO_FIELD = "idfields.django_app.fields.SnowflakeAutoField"
IDFIELDS = {"NODE_SOURCE": "lease"}
SILENCED_SYSTEM_CHECKS = ["idfields.W010"]  # "notes" pins AutoField as an installed app would
"""

FILES = {
    "notes/__init__.py": "",
    "notes/migrations/__init__.py": "",
    "notes/apps.py": """\
from django.apps import AppConfig


class NotesConfig(AppConfig):
    name = "notes"
    default_auto_field = "django.db.models.AutoField"  # a third-party app pins its keys
""",
    "notes/models.py": """\
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models


class Note(models.Model):
    content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE)
    object_id = models.PositiveIntegerField()  # no GenericForeignKey reads it
    text = models.CharField(max_length=20)


class Tagged(models.Model):
    content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE, related_name="+")
    object_id = models.IntegerField()
    content_object = GenericForeignKey()
""",
    "shop/__init__.py": "",
    "shop/migrations/__init__.py": "",
    "shop/models.py": """\
from django.contrib.contenttypes.fields import GenericRelation
from django.db import models


class Item(models.Model):
    name = models.CharField(max_length=20)
    notes = GenericRelation("notes.Note")
""",
    "shop/tests.py": """\
from django.test import TestCase

from shop.models import Item


class ItemTests(TestCase):
    def test_an_item_gets_a_snowflake_key(self):
        self.assertGreater(Item.objects.create(name="i").pk, 2**40)
""",
}

WIDEN = """\
from django.db import migrations

from idfields.migrations.django import WidenObjectId


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial"), ("notes", "0001_initial")]
    operations = [WidenObjectId("notes")]  # both models: the GenericRelation one too
"""

NOTE_COUNT = """\
import django

django.setup()
from django.contrib.contenttypes.models import ContentType

from idfields.migrations.django import WidenObjectId
from notes.models import Note, Tagged
from shop.models import Item

item = Item.objects.create(name="i")
Note.objects.create(content_type=ContentType.objects.get_for_model(Item), object_id=item.pk)
Tagged.objects.create(content_object=item)
print(item.pk > 2**40, item.notes.count(), Item.objects.filter(notes__text="").count())
print(Tagged.objects.filter(object_id=item.pk).get().content_object == item)
print(*WidenObjectId("notes", "Note").widened_columns())
"""


class Project:
    def __init__(self, path: Path, url: str) -> None:
        self.path = path
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("IDFIELDS_", "DJANGO_"))},
            "PROJECT_DATABASE_URL": url,
            "DJANGO_SETTINGS_MODULE": "settings",
            "PYTHONPATH": os.pathsep.join([str(path), str(ROOT)]),
        }

    def run(self, *args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "django", *args]
        return subprocess.run(
            command, cwd=self.path, env=self.env, capture_output=True, text=True, timeout=300
        )

    def ok(self, *args: str, code: str | None = None) -> str:
        done = self.run(*args, code=code)
        assert done.returncode == 0, f"{args or 'script'} exited {done.returncode}:\n{done.stderr}"
        return done.stdout + done.stderr


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def project(
    request: pytest.FixtureRequest, tmp_path: Path, fresh_database: Callable[[str], str]
) -> Project:
    vendor = request.param
    url = f"sqlite://{tmp_path / 'db.sqlite3'}" if vendor == "sqlite" else fresh_database(vendor)
    (tmp_path / "settings.py").write_text(SETTINGS)
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return Project(tmp_path, url)


def test_generic_object_ids_are_widened_without_blocking_commands(
    project: Project,
) -> None:
    sqlite = urlsplit(project.env["PROJECT_DATABASE_URL"]).scheme == "sqlite"
    project.ok("makemigrations", "notes", "shop")
    project.ok("migrate")
    plain = project.ok("check")  # reads no database: warns, never stops
    assert ("idfields.W021" in plain) is not sqlite, plain  # SQLite's integers are 64-bit
    assert sqlite or ("notes.Note.object_id" in plain and "notes.Tagged.object_id" in plain)
    database = project.run("check", "--database", "default")
    if sqlite:
        assert database.returncode == 0, database.stderr
    else:  # the column is int4 / int(10) unsigned, and nothing widens it
        assert database.returncode == 1 and "idfields.E020" in database.stderr, database.stderr

    project.ok("makemigrations", "shop", "--empty", "--name", "widen_notes")
    (project.path / "shop" / "migrations" / "0002_widen_notes.py").write_text(WIDEN)
    assert "idfields.W021" not in project.ok("check")  # the graph widens it: no database read
    assert "No changes detected" in project.ok("makemigrations", "--check")
    assert "idfields.E020" not in project.ok("check", "--database", "default")  # pending
    project.ok("migrate")
    assert "no issues" in project.ok("check", "--database", "default")
    assert project.ok(code=NOTE_COUNT).splitlines() == [
        "True 1 1",
        "True",
        "(None, 'notes_note', 'object_id')",
    ]
    assert "Ran 1 test" in project.ok("test", "shop", "--noinput")


def test_widen_object_id_refuses_a_wrong_model_on_every_database(project: Project) -> None:
    project.ok("makemigrations", "notes", "shop")
    wrong = WIDEN.replace('WidenObjectId("notes")', 'WidenObjectId("notes", "Nope")')
    (project.path / "shop" / "migrations" / "0002_widen_notes.py").write_text(wrong)
    done = project.run("migrate")
    assert done.returncode == 1 and "WidenObjectId('notes.Nope')" in done.stderr, done.stderr
