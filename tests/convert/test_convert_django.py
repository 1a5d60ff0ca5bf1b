"""ConvertToKSortedId through Django's migration executor and sqlmigrate, Postgres and MariaDB;
on SQLite, Django's own table rebuild."""

from __future__ import annotations

import re
import time

import pytest
from django.db import IntegrityError, transaction

from idfields.layouts import get_layout
from idfields.migrations import convert
from tests.convert.djapp.harness import ConvApp

BOTH = pytest.mark.parametrize(
    "convapp", [("postgresql", "migrations"), ("mysql", "migrations")], indirect=True
)


def populate(app: ConvApp) -> dict[str, list[tuple[int, str]]]:
    """30 parents (the last deleted: the counter is past max(id)), tags, children, accounts."""
    model = app.models("0001_initial")
    parent, tag, child, account = (model(name) for name in ("Parent", "Tag", "Child", "Account"))
    tags = [tag.objects.using(app.alias).create() for _ in range(3)]
    accounts = [account.objects.using(app.alias).create() for _ in range(2)]
    for n in range(30):
        row = parent.objects.using(app.alias).create(name=f"p{n}")
        row.tags.add(tags[n % 3])
        child.objects.using(app.alias).create(parent=row, account=accounts[n % 2])
    parent.objects.using(app.alias).filter(name="p29").delete()
    return snapshot(app)


def snapshot(app: ConvApp) -> dict[str, list[tuple[int, str]]]:
    return {
        "parent": app.sql("SELECT id, name FROM convapp_parent ORDER BY id"),
        "child": app.sql("SELECT parent_id, account_id FROM convapp_child ORDER BY id"),
        "tags": app.sql("SELECT parent_id, tag_id FROM convapp_parent_tags ORDER BY id"),
    }


def column_types(app: ConvApp) -> dict[str, str]:
    schema = "current_schema()" if app.connection.vendor == "postgresql" else "DATABASE()"
    rows = app.sql(
        "SELECT table_name, column_name, data_type FROM information_schema.columns "  # noqa: S608
        f"WHERE table_schema = {schema} AND table_name LIKE 'convapp%%' "
        "AND (column_name LIKE '%%_id' OR table_name IN ('convapp_parent', 'convapp_account')) "
        "AND column_name <> 'name'"
    )
    return {f"{table}.{column}": data_type for table, column, data_type in rows}


@BOTH
def test_convert_forwards_and_back(convapp: ConvApp) -> None:
    app = convapp
    missing = app.sqlmigrate("0002_convert")
    assert "table 'convapp_parent' does not exist yet" in missing

    app.migrate("0001_initial")
    before = populate(app)
    assert max(row[0] for row in before["parent"]) == 29

    printed = app.sqlmigrate("0002_convert")
    with app.connection.cursor() as cursor:
        key = convert.introspect(
            app.connection.vendor, convert.cursor_query(cursor), "convapp_parent"
        )
    expected = convert.forwards(key, convert.Target.of("snowflake", lock_timeout="2s"))
    digits = re.compile(r"\d{12,}")  # the first ID in the max(id) guard moves with the clock
    for statement in expected:
        assert digits.sub("N", statement.annotated() + ";") in digits.sub("N", printed)
    assert sum(statement.rewrites for statement in expected) == 3  # the key and its 2 references
    assert "rewrites the table" in printed
    assert "convapp_parent_tags" in printed and "convapp_child" in printed

    app.migrate("0002_convert")
    assert snapshot(app) == before
    types = column_types(app)
    assert types == {
        "convapp_parent.id": "bigint",
        "convapp_child.parent_id": "bigint",
        "convapp_child.account_id": "bigint",
        "convapp_parent_tags.parent_id": "bigint",
        "convapp_parent_tags.tag_id": "integer" if app.connection.vendor == "postgresql" else "int",
        "convapp_account.id": "bigint",
    }
    if app.connection.vendor == "postgresql":
        assert app.sql(
            "SELECT column_default, is_identity FROM information_schema.columns "
            "WHERE table_name = 'convapp_parent' AND column_name = 'id'"
        ) == [(None, "NO")]

    model = app.models("0002_convert")
    parent, tag, child = model("Parent"), model("Tag"), model("Child")
    made = [parent.objects.using(app.alias).create(name=f"new{n}") for n in range(3)]
    ids = [row.pk for row in made]
    assert ids == sorted(ids) and ids[0] > 29
    decoded = get_layout("snowflake").decode(ids[-1])
    assert decoded.values["node"] == 7 and decoded.time is not None
    assert abs(decoded.time.timestamp() - time.time()) < 60
    made[0].tags.add(tag.objects.using(app.alias).first())
    child.objects.using(app.alias).create(parent=made[0])
    with pytest.raises(IntegrityError), transaction.atomic(using=app.alias):
        child.objects.using(app.alias).create(parent_id=max(ids) + 1)
    account = model("Account").objects.using(app.alias).create()
    assert account.pk > 2**40

    app.migrate("0001_initial")
    old_parent = app.models("0001_initial")("Parent")
    back = old_parent.objects.using(app.alias).create(name="back")
    assert back.pk > max(ids)
    assert old_parent.objects.using(app.alias).count() == 29 + 3 + 1
    restore = {"postgresql": "ADD GENERATED BY DEFAULT AS IDENTITY", "mysql": "AUTO_INCREMENT"}
    assert restore[app.connection.vendor] in app.sqlmigrate("0002_convert", backwards=True)
    app.migrate(None)
    assert column_types(app) == {}


@pytest.mark.parametrize("convapp", [("sqlite", "migrations")], indirect=True)
def test_convert_on_sqlite_leaves_no_rowid_to_number_rows(convapp: ConvApp) -> None:
    """The INTEGER PRIMARY KEY is SQLite's rowid, which would give a row inserted without an id
    max(id) + 1, the next ID issued: the key becomes a plain bigint, rows and links kept."""
    app = convapp
    app.migrate("0001_initial")
    before = populate(app)

    app.migrate("0002_convert")
    assert snapshot(app) == before
    declared = dict(app.sql("SELECT name, lower(type) FROM pragma_table_info('convapp_parent')"))
    assert declared["id"] == "bigint"
    assert app.sql("PRAGMA foreign_key_check") == []
    refused = re.escape("NOT NULL constraint failed: convapp_parent.id")
    with pytest.raises(IntegrityError, match=refused), transaction.atomic(using=app.alias):
        app.sql("INSERT INTO convapp_parent (name) VALUES ('raw')")
    parent = app.models("0002_convert")("Parent").objects.using(app.alias).create(name="new")
    assert parent.pk > 2**40

    app.migrate("0001_initial")
    declared = dict(app.sql("SELECT name, lower(type) FROM pragma_table_info('convapp_parent')"))
    assert declared["id"] == "integer"  # the rowid again, every row kept
    assert [row[0] for row in app.sql("SELECT id FROM convapp_parent ORDER BY id")] == [
        *(row[0] for row in before["parent"]),
        parent.pk,
    ]
