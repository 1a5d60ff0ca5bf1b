"""Link tables Django creates for a ManyToManyField keep every row with our default key.

An auto-created through model is rendered from the migration state, which has no AppConfig, so
``migrate`` gives its ``id`` the class of ``DEFAULT_AUTO_FIELD``; at run time the AppConfig's
``default_auto_field`` (contrib.auth pins ``AutoField``) decides, and Django inserts the link
rows without an id. Such a column must fill itself, as BigAutoField's does; one keyed by our IDs
must not. Each case is a project made as ``startproject`` makes one (contrib.auth, contenttypes,
an app of ours with a plain ManyToManyField), migrated in a subprocess, on SQLite, PostgreSQL
and MariaDB. Django never alters a link table's key when an app's key class changes: a project
that adopts our ``DEFAULT_AUTO_FIELD`` keeps link tables its database numbers (``check
--database`` says ``idfields.E051``), an app that pins ``BigAutoField`` later keeps ours, which
the database does not fill (``idfields.E050``); ``idfields_repair_keys`` repairs both, rows kept.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from databases import DbUrl
from test_django_setup_slips import make_project, manage, steps

pytestmark = pytest.mark.slow

AUTH = ["django.contrib.auth", "django.contrib.contenttypes", "idfields.django_app", "shop"]

SHOP_MODELS = """\
from django.db import models


class Order(models.Model):
    note = models.CharField(max_length=100)


class Tag(models.Model):
    name = models.CharField(max_length=100)
    orders = models.ManyToManyField(Order)
"""

SHOP_APPS = """\
from django.apps import AppConfig


class ShopConfig(AppConfig):
    name = "shop"
    default_auto_field = "django.db.models.AutoField"
"""

USE_LINKS = """\
from django.contrib.auth.models import Group, Permission, User
from shop.models import Order, Tag

user = User.objects.create_user("ada")
group, other = Group.objects.create(name="staff"), Group.objects.create(name="other")
add, change = (Permission.objects.get(codename=f"{verb}_group") for verb in ("add", "change"))
user.groups.add(group)
user.groups.add(other)  # one row at a time: MariaDB fills an omitted NOT NULL key with 0
user.user_permissions.add(add)
user.user_permissions.add(Permission.objects.get(codename="delete_group"))
group.permissions.add(change)
group.permissions.add(Permission.objects.get(codename="view_group"))
tag = Tag.objects.create(name="t")
tag.orders.add(Order.objects.create(note="a"))
tag.orders.add(Order.objects.create(note="b"))
user = User.objects.get(pk=user.pk)
print(
    user.groups.count(), user.user_permissions.count(), group.permissions.count(),
    user.has_perm("auth.add_group"), user.has_perm("auth.change_group"), tag.orders.count(),
)
"""
ALL_KEPT = "2 2 2 True True 2"


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def project(
    request: pytest.FixtureRequest, tmp_path: Path, fresh_database: Callable[[str], str]
) -> Path:
    """An auth project with a shop app keyed by our DEFAULT_AUTO_FIELD, no migration made."""
    if request.param == "sqlite":
        database = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "db.sqlite3")}
    else:
        database = DbUrl.parse(fresh_database(request.param)).django_databases()["default"]
    make_project(tmp_path, database, AUTH)
    (tmp_path / "shop" / "models.py").write_text(SHOP_MODELS)
    return tmp_path


def use_links(path: Path) -> str:
    done = manage(path, "shell", "-c", USE_LINKS)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_link_rows_of_contrib_auth_and_a_pinned_app_are_kept(project: Path) -> None:
    (project / "shop" / "apps.py").write_text(SHOP_APPS)
    steps(project, ("makemigrations", "shop"), ("migrate",), ("check", "--database", "default"))
    assert use_links(project) == ALL_KEPT


KEEP_LINKS = """\
from django.contrib.auth.models import Group, User
from shop.models import Order, Tag

user = User.objects.create_user("grace")
user.groups.add(Group.objects.create(name="kept"))
Tag.objects.create(name="kept").orders.add(Order.objects.create(note="kept"))
"""
LINKS = (
    "from django.contrib.auth.models import User; from shop.models import Tag; "
    "print(sorted(User.groups.through.objects.values_list('id', flat=True)), "
    "sorted(Tag.orders.through.objects.values_list('id', flat=True)))"
)
ADD_WITHOUT_ID = """\
from django.db import DatabaseError, connection
from shop.models import Order, Tag

tag = Tag.objects.create(name="raw")
try:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO shop_tag_orders (tag_id, order_id) VALUES (%s, %s)",
            [tag.pk, Order.objects.create(note="raw").pk],
        )
    print("went in")
except DatabaseError as error:
    print("refused:", str(error).splitlines()[0])
"""


def links(path: Path) -> str:
    done = manage(path, "shell", "-c", LINKS)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def switch_key(path: Path, old: str, new: str) -> None:
    settings = path / "settings.py"
    settings.write_text(settings.read_text().replace(old, new))


def found_and_repaired(path: Path, check_id: str, shape: str) -> None:
    """``check --database`` reports shop's link table alone; the repair clears it."""
    assert manage(path, "check").returncode == 0  # no database read: nothing to say
    check = manage(path, "check", "--database", "default")
    assert check.returncode != 0, check.stdout
    assert f"default:shop_tag_orders: ({check_id})" in check.stderr, check.stderr
    assert check.stderr.count(f"({check_id})") == 1, check.stderr  # auth's tables fill themselves
    assert "idfields_repair_keys --database default" in check.stderr, check.stderr
    repaired = manage(path, "idfields_repair_keys")
    assert repaired.returncode == 0, repaired.stderr
    assert f"repaired shop_tag_orders (shop.Tag_orders): {shape}" in repaired.stdout
    steps(path, ("check", "--database", "default"))
    again = manage(path, "idfields_repair_keys")
    assert "every key column of database 'default' matches" in again.stdout, again.stdout


OURS = "idfields.django_app.fields.SnowflakeAutoField"
DJANGOS = "django.db.models.BigAutoField"


def test_a_project_adopting_our_keys_gets_link_keys_the_database_never_numbers(
    project: Path,
) -> None:
    switch_key(project, OURS, DJANGOS)
    steps(project, ("makemigrations", "shop"), ("migrate",), ("shell", "-c", KEEP_LINKS))
    switch_key(project, DJANGOS, OURS)
    steps(project, ("makemigrations", "shop"))  # Order's and Tag's keys; never Tag_orders'
    blocked = manage(project, "migrate")
    assert blocked.returncode != 0 and "idfields.E051" in blocked.stderr, blocked.stderr

    found_and_repaired(project, "idfields.E051", "a plain bigint")
    steps(project, ("migrate",))
    assert links(project) == "[1] [1]"  # rows kept, with the ids the database gave them
    added = manage(project, "shell", "-c", ADD_WITHOUT_ID)
    assert added.stdout.strip().splitlines()[-1].startswith("refused:"), added.stdout
    assert use_links(project) == ALL_KEPT


def test_a_pinned_app_after_migrating_gets_link_keys_the_database_fills(project: Path) -> None:
    steps(project, ("makemigrations", "shop"), ("migrate",), ("shell", "-c", KEEP_LINKS))
    kept = links(project)
    (project / "shop" / "apps.py").write_text(SHOP_APPS.replace("AutoField", "BigAutoField"))

    found_and_repaired(project, "idfields.E050", "the database numbers its rows")
    steps(project, ("makemigrations", "shop"), ("migrate",))
    assert links(project) == kept  # rows kept, with our IDs
    added = manage(project, "shell", "-c", ADD_WITHOUT_ID)
    assert added.stdout.strip().splitlines()[-1] == "went in", added.stderr
