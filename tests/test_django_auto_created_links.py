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


PLAIN_BIGINT_KEY = """\
from idfields.django_app.fields import SnowflakeAutoField


class PlainBigintKey(SnowflakeAutoField):
    \"\"\"Our key as a plain bigint column (no identity): how the link tables stay broken.\"\"\"

    def get_internal_type(self):
        return "BigAutoField" if self.keeps_migration_log else "BigIntegerField"
"""

KEEP_LINKS = """\
from django.contrib.auth.models import Group, User
from shop.models import Order, Tag

user = User.objects.create_user("grace")
User.groups.through.objects.create(id=7, user=user, group=Group.objects.create(name="kept"))
tag = Tag.objects.create(name="kept")
Tag.orders.through.objects.create(id=9, tag=tag, order=Order.objects.create(note="kept"))
"""
KEPT = (
    "from django.contrib.auth.models import User; from shop.models import Tag; "
    "print(sorted(User.groups.through.objects.values_list('id', flat=True)), "
    "sorted(Tag.orders.through.objects.values_list('id', flat=True)))"
)


def test_a_database_migrated_with_plain_bigint_link_keys_is_found_and_repaired(
    project: Path,
) -> None:
    (project / "shop" / "oldkey.py").write_text(PLAIN_BIGINT_KEY)
    settings = project / "settings.py"
    ours = "idfields.django_app.fields.SnowflakeAutoField"
    settings.write_text(settings.read_text().replace(ours, "shop.oldkey.PlainBigintKey"))
    steps(project, ("migrate",))
    settings.write_text(settings.read_text().replace("shop.oldkey.PlainBigintKey", ours))
    steps(project, ("shell", "-c", KEEP_LINKS))

    assert manage(project, "check").returncode == 0  # no database read: nothing to say
    check = manage(project, "check", "--database", "default")
    assert check.returncode != 0, check.stdout
    for table in ("auth_user_groups", "auth_user_user_permissions", "auth_group_permissions"):
        assert f"default:{table}: (idfields.E050)" in check.stderr, check.stderr
    assert "default:shop_tag_orders: (idfields.E050)" in check.stderr, check.stderr
    assert "idfields_repair_keys --database default" in check.stderr, check.stderr

    repaired = manage(project, "idfields_repair_keys")
    assert repaired.returncode == 0, repaired.stderr
    assert "repaired auth_user_groups (auth.User_groups)" in repaired.stdout, repaired.stdout
    steps(project, ("check", "--database", "default"))
    kept = manage(project, "shell", "-c", KEPT)
    assert kept.stdout.strip().splitlines()[-1] == "[7] [9]", kept.stderr
    assert use_links(project) == ALL_KEPT
    again = manage(project, "idfields_repair_keys")
    assert "every key of database 'default' is filled" in again.stdout, again.stdout
