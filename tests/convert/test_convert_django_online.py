"""The online path as Django operations: shadow, backfill, validate, swap, and the way back."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from tests.convert.djapp.harness import ConvApp

ONLINE = ("postgresql", "online_migrations")


def shadow_columns(app: ConvApp) -> list[tuple[str, str]]:
    return app.sql(
        "SELECT table_name, column_name FROM information_schema.columns WHERE "
        "table_schema = current_schema() AND column_name LIKE '%%convert_to_bigint' ORDER BY 1"
    )


@pytest.mark.parametrize("convapp", [ONLINE], indirect=True)
def test_online_operations(convapp: ConvApp) -> None:
    app = convapp
    app.migrate("0001_initial")
    model = app.models("0001_initial")
    tags = [model("Tag").objects.using(app.alias).create() for _ in range(2)]
    parents = (
        model("Parent")
        .objects.using(app.alias)
        .bulk_create(model("Parent")(name=f"p{n}") for n in range(2000))
    )
    for row in parents[:50]:
        row.tags.add(*tags)
    model("Child").objects.using(app.alias).bulk_create(
        model("Child")(parent=row) for row in parents
    )

    printed = app.sqlmigrate("0002_shadow")
    assert not printed.startswith("BEGIN;")  # atomic = False: each step its own transaction
    assert printed.count("BEGIN;") == 3  # shadow columns + triggers, drop old run's keys, NOT VALID
    for text in (
        "ADD COLUMN IF NOT EXISTS",
        "ctid >= '(2,0)'::tid",
        "CREATE UNIQUE INDEX CONCURRENTLY",
        "NOT VALID",
        "VALIDATE CONSTRAINT",
        "-- SHARE UPDATE EXCLUSIVE",
    ):
        assert text in printed, text

    app.migrate("0002_shadow")
    assert len(shadow_columns(app)) == 3
    app.migrate("0001_initial")  # AddBigintShadow's way back: all of it gone
    assert shadow_columns(app) == []
    app.migrate("0002_shadow")  # and again: every step is idempotent
    app.sql("INSERT INTO convapp_parent (name) VALUES ('synced')")  # the trigger copies its id
    assert app.sql(
        "SELECT count(*) FROM convapp_parent WHERE id_convert_to_bigint IS DISTINCT FROM id"
    ) == [(0,)]
    assert 'ADD CONSTRAINT "convapp_parent_pkey" PRIMARY KEY USING INDEX' in app.sqlmigrate(
        "0003_swap"
    )

    before = app.sql("SELECT id, name FROM convapp_parent ORDER BY id")
    app.migrate("0003_swap")
    assert app.sql("SELECT id, name FROM convapp_parent ORDER BY id") == before
    assert shadow_columns(app) == []
    assert app.sql(
        "SELECT table_name, data_type FROM information_schema.columns WHERE table_schema = "
        "current_schema() AND (table_name, column_name) IN (('convapp_parent', 'id'), "
        "('convapp_child', 'parent_id'), ('convapp_parent_tags', 'parent_id')) ORDER BY 1"
    ) == [
        ("convapp_child", "bigint"),
        ("convapp_parent", "bigint"),
        ("convapp_parent_tags", "bigint"),
    ]

    model = app.models("0003_swap")
    made = model("Parent").objects.using(app.alias).create(name="k-sorted")
    assert made.pk > before[-1][0] and made.pk > 2**40
    made.tags.add(model("Tag").objects.using(app.alias).first())
    model("Child").objects.using(app.alias).create(parent=made)
    with pytest.raises(IntegrityError), transaction.atomic(using=app.alias):
        model("Child").objects.using(app.alias).create(parent_id=made.pk + 1)

    app.migrate("0001_initial")
    back = app.models("0001_initial")("Parent").objects.using(app.alias).create(name="back")
    assert back.pk > made.pk


@pytest.mark.parametrize("convapp", [("mysql", "online_migrations")], indirect=True)
def test_online_refused_on_mysql(convapp: ConvApp) -> None:
    convapp.migrate("0001_initial")
    with pytest.raises(ValueError, match=r"PostgreSQL only.*ConvertToKSortedId"):
        convapp.migrate("0002_shadow")
