"""Link tables Django creates for a ManyToManyField keep every row with our default key.

An auto-created through model is rendered from the migration state, which has no AppConfig, so
``migrate`` gives its ``id`` the class of ``DEFAULT_AUTO_FIELD``; at run time the AppConfig's
``default_auto_field`` (contrib.auth pins ``AutoField``) decides, and Django inserts the link
rows without an id. The column must therefore fill itself, as BigAutoField's does. Each case is a
project made as ``startproject`` makes one (contrib.auth, contenttypes, an app of ours pinning
``AutoField`` with a plain ManyToManyField), migrated in a subprocess, on SQLite, PostgreSQL and
MariaDB. A database migrated with plain ``bigint`` link keys is found by ``check --database``
(``idfields.E050``) and repaired, rows kept, by ``idfields_repair_keys`` or ``RepairAutoKeys``.
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
    """An auth project with an app pinning ``AutoField``, not migrated yet."""
    if request.param == "sqlite":
        database = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "db.sqlite3")}
    else:
        database = DbUrl.parse(fresh_database(request.param)).django_databases()["default"]
    make_project(tmp_path, database, AUTH)
    (tmp_path / "shop" / "models.py").write_text(SHOP_MODELS)
    (tmp_path / "shop" / "apps.py").write_text(SHOP_APPS)
    steps(tmp_path, ("makemigrations", "shop"))
    return tmp_path


def use_links(path: Path) -> str:
    done = manage(path, "shell", "-c", USE_LINKS)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_link_rows_of_contrib_auth_and_a_pinned_app_are_kept(project: Path) -> None:
    steps(project, ("migrate",), ("check", "--database", "default"))
    assert use_links(project) == ALL_KEPT
