"""The key column ``migrate`` makes for an ID auto field, beside rows inserted without an id.

Where our field issues the IDs, the column is a plain ``bigint NOT NULL PRIMARY KEY``: a column
the database also fills (SQLite's rowid, MariaDB's AUTO_INCREMENT) gives a row inserted without
an id ``max(id) + 1``, which is the next ID the application issues within the same millisecond,
so the application's INSERT fails, and a ``.add()`` on a link table (``INSERT OR IGNORE`` /
``INSERT IGNORE``) drops its row without a word. An insert without an id is refused instead,
with the database's own NOT NULL error naming the column. Where Django inserts without an id (a
link table of an app pinning ``AutoField``, also from a data migration's historical models),
the database fills every row.

Each case is a project migrated and run in a subprocess, on SQLite, PostgreSQL and MariaDB: the
shop app takes ``DEFAULT_AUTO_FIELD`` (ours), contrib.auth pins ``AutoField``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from databases import DbUrl
from test_django_setup_slips import make_project, manage, steps

pytestmark = pytest.mark.slow

SHOP_MODELS = """\
from django.db import models


class Order(models.Model):
    note = models.CharField(max_length=100)


class Tag(models.Model):
    name = models.CharField(max_length=100)
    orders = models.ManyToManyField(Order)
"""

# A data migration on contrib.auth's historical models: its link model's key is ours in the
# migration state, yet the table is the one Django fills without ids at run time.
DATA_MIGRATION = """\
from django.db import migrations

ROWS = 300


def forwards(apps, schema_editor):
    User, Group = apps.get_model("auth", "User"), apps.get_model("auth", "Group")
    user, other = User.objects.create(username="mig"), User.objects.create(username="other")
    for i in range(ROWS):
        group = Group.objects.create(name=f"g{i}")
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO auth_user_groups (user_id, group_id) VALUES (%s, %s)",
                [other.pk, group.pk],
            )
        user.groups.add(group)


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial"), ("auth", "__latest__")]
    operations = [migrations.RunPython(forwards)]
"""

INTERLEAVE = """\
import json

from django.contrib.auth.models import User
from django.db import DatabaseError, IntegrityError, connection, transaction
from shop.models import Order, Tag

ROWS = 300

went_in, refusals = 0, set()


def without_id(table, columns, params):
    \"\"\"An INSERT that leaves the id to the database: the row goes in, or the message.\"\"\"
    global went_in
    marks = ", ".join(["%s"] * len(params))
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", params)
        went_in += 1
    except DatabaseError as error:  # MariaDB: OperationalError 1364
        refusals.add(str(error).splitlines()[0])


# One transaction around each run (a savepoint per statement): the app's IDs come fast, as
# under load, so the next ID often falls in the same millisecond as the last (last + 1).
tag, other = Tag.objects.create(name="t"), Tag.objects.create(name="other")
collisions = 0
with transaction.atomic():
    for i in range(ROWS):
        without_id("shop_order", "note", [f"raw{i}"])
        try:
            with transaction.atomic():
                Order.objects.create(note=f"app{i}")
        except IntegrityError:
            collisions += 1

with transaction.atomic():
    for order in Order.objects.bulk_create(Order(note=f"linked{i}") for i in range(ROWS)):
        without_id("shop_tag_orders", "tag_id, order_id", [other.pk, order.pk])
        tag.orders.add(order)

print(json.dumps({
    "app collisions": collisions,
    "links lost": ROWS - tag.orders.count(),
    "migration links lost": ROWS - User.objects.get(username="mig").groups.count(),
    "inserts without id that went in": went_in,
    "refusals": sorted(refusals),
}))
"""


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def project(
    request: pytest.FixtureRequest, tmp_path: Path, fresh_database: Callable[[str], str]
) -> Path:
    """A migrated project: contrib.auth and a shop app keyed by our DEFAULT_AUTO_FIELD."""
    if request.param == "sqlite":
        database = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "db.sqlite3")}
    else:
        database = DbUrl.parse(fresh_database(request.param)).django_databases()["default"]
    apps = ["django.contrib.auth", "django.contrib.contenttypes", "idfields.django_app", "shop"]
    make_project(tmp_path, database, apps)
    (tmp_path / "shop" / "models.py").write_text(SHOP_MODELS)
    steps(tmp_path, ("makemigrations", "shop"))
    (tmp_path / "shop" / "migrations" / "0002_links.py").write_text(DATA_MIGRATION)
    steps(tmp_path, ("migrate",))
    return tmp_path


def test_inserts_without_an_id_never_take_the_ids_the_application_issues(project: Path) -> None:
    done = manage(project, "shell", "-c", INTERLEAVE)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["app collisions"] == 0, report
    assert report["links lost"] == 0, report
    assert report["migration links lost"] == 0, report
    # An insert without an id into a table keyed by our IDs is refused by the column itself.
    assert report["inserts without id that went in"] == 0, report
    for refusal in report["refusals"]:
        assert "null" in refusal.lower() or "default value" in refusal, report
        assert "id" in refusal, report
