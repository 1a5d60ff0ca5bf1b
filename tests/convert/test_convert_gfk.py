"""Columns that hold the key's IDs without a foreign key: a GenericForeignKey's ``object_id`` of
another app (Django), ``also=[...]`` and its warning (Alembic)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from databases import DbUrl
from django.db.migrations.state import ProjectState

import idfields.migrations.alembic  # noqa: F401  (registers the operations)
from idfields import StaticNode, make_generator
from idfields.errors import UnwidenedIdColumn
from idfields.migrations.django import WidenObjectId
from tests.convert.djapp.harness import ConvApp

BOTH = pytest.mark.parametrize(
    "convapp", [("postgresql", "migrations"), ("mysql", "migrations")], indirect=True
)
Run = Callable[..., list[tuple[Any, ...]]]


def object_id_type(app: ConvApp) -> str:
    schema = "current_schema()" if app.connection.vendor == "postgresql" else "DATABASE()"
    rows = app.sql(
        "SELECT data_type FROM information_schema.columns WHERE "  # noqa: S608
        f"table_schema = {schema} AND table_name = 'gfkapp_taggeditem' "
        "AND column_name = 'object_id'"
    )
    return str(rows[0][0])


def tag(app: ConvApp, object_id: int) -> None:
    from django.contrib.contenttypes.models import ContentType

    kind, _ = ContentType.objects.db_manager(app.alias).get_or_create(
        app_label="convapp", model="parent"
    )
    app.sql(
        "INSERT INTO gfkapp_taggeditem (tag, content_type_id, object_id) VALUES ('t', %s, %s)",
        kind.pk,
        object_id,
    )


@BOTH
def test_conversion_widens_generic_object_ids(convapp: ConvApp) -> None:
    app = convapp
    app.migrate("0001_initial", app="gfkapp")
    app.migrate("0001_initial")
    parent = app.models("0001_initial")("Parent").objects.using(app.alias).create(name="p")
    tag(app, parent.pk)
    assert object_id_type(app) in ("integer", "int")
    assert "gfkapp_taggeditem" in app.sqlmigrate("0002_convert")

    app.migrate("0002_convert")
    assert object_id_type(app) == "bigint"
    new = app.models("0002_convert")("Parent").objects.using(app.alias).create(name="new")
    assert new.pk > 2**40
    tag(app, new.pk)  # an int object_id would fail: "integer out of range" / "Out of range value"
    assert app.sql("SELECT COUNT(*) FROM gfkapp_taggeditem") == [(2,)]


class _GfkRouter:
    """Sends the gfkapp models to the test's alias (where the system check reads the column)."""

    def __init__(self, alias: str) -> None:
        self.alias = alias

    def db_for_write(self, model: Any, **hints: Any) -> str | None:
        return self.alias if model._meta.app_label == "gfkapp" else None

    db_for_read = db_for_write


@BOTH
def test_widen_object_id_clears_e020(convapp: ConvApp) -> None:
    from django.apps import apps

    from idfields.django_app.unwidened import check_unwidened_columns

    app = convapp
    app.migrate("0001_initial", app="gfkapp")

    def e020() -> list[str]:
        return [
            str(message.obj)
            for message in check_unwidened_columns(
                [apps.get_app_config("gfkapp")], databases=[app.alias]
            )
            if message.id == "idfields.E020"
        ]

    operation = WidenObjectId("gfkapp", "TaggedItem", lock_timeout="2s")
    assert operation.deconstruct()[1:] == (["gfkapp", "TaggedItem"], {"lock_timeout": "2s"})
    from django.db import router

    router.routers = [_GfkRouter(app.alias)]  # a cached property: deleted to restore it
    try:
        assert e020() == ["gfkapp.TaggedItem.object_id"]
        with app.connection.schema_editor(atomic=False) as editor:
            operation.database_forwards("convapp", editor, ProjectState(), ProjectState())
        assert object_id_type(app) == "bigint"
        assert e020() == []
    finally:
        del router.routers
    tag(app, make_generator("snowflake", StaticNode(5))())


def test_alembic_also_and_warning(pg: Run, postgres_url: str) -> None:
    pg("CREATE TABLE conv.item (id serial PRIMARY KEY)")
    pg("CREATE TABLE conv.comment (id serial PRIMARY KEY, kind text, object_id integer)")
    pg("CREATE TABLE conv.audit (id serial PRIMARY KEY, item_id integer)")
    engine = sa.create_engine(DbUrl.parse(postgres_url).sqlalchemy_url())
    try:
        with engine.begin() as conn:
            op: Any = Operations(MigrationContext.configure(conn))
            with pytest.warns(UnwidenedIdColumn, match=r"audit\.item_id") as warned:
                op.convert_to_ksorted_id("item", schema="conv", also=["comment.object_id"])
            assert "comment.object_id" not in str(warned[0].message)
    finally:
        engine.dispose()
    types = dict(
        pg(
            "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'conv' AND column_name IN ('object_id', 'item_id')"
        )
    )
    assert types == {"comment.object_id": "bigint", "audit.item_id": "integer"}


@BOTH
def test_a_widened_object_id_holds_63_bit_ids_at_every_layer(convapp: ConvApp) -> None:
    """After ``WidenObjectId`` (named by the multi-table child, whose GenericForeignKey and
    column are its parent's) Django takes the field for bigint too: lookups find the row
    instead of answering "no rows" unasked, validation, forms and serializers take the ID,
    and nothing of the app's own model or migrations changed."""
    from django import forms
    from django.apps import apps
    from django.core import serializers
    from django.db import router

    app = convapp
    app.migrate("0001_initial", app="gfkapp")
    router.routers = [_GfkRouter(app.alias)]  # a cached property: deleted to restore it
    try:
        with app.connection.schema_editor(atomic=False) as editor:
            WidenObjectId("gfkapp", "TaggedNote").database_forwards(
                "convapp", editor, ProjectState(), ProjectState()
            )
        assert object_id_type(app) == "bigint"
        big = make_generator("snowflake", StaticNode(5))()
        tag(app, big)
        model = apps.get_model("gfkapp", "TaggedItem")
        field = model._meta.get_field("object_id")
        assert model.objects.using(app.alias).filter(object_id=big).count() == 1
        assert model.objects.using(app.alias).filter(object_id__in=[big]).count() == 1
        assert model.objects.using(app.alias).filter(object_id__gte=big).count() == 1
        row = model.objects.using(app.alias).get(object_id=big)
        row.full_clean(exclude=["content_type"])  # the range validators are bigint's

        class Form(forms.ModelForm):  # type: ignore[type-arg]
            class Meta:
                model = apps.get_model("gfkapp", "TaggedItem")
                fields = ["tag", "object_id"]

        form = Form({"tag": "t", "object_id": str(big)}, instance=row)
        assert form.is_valid(), form.errors
        dumped = serializers.serialize("json", [row])
        [loaded] = serializers.deserialize("json", dumped)
        assert loaded.object.object_id == big
        # What the app declared stays: its class, its type name, its migration.
        assert type(field).__name__ == "PositiveIntegerField"
        assert field.get_internal_type() == "PositiveIntegerField"
        assert field.deconstruct()[1] == "django.db.models.PositiveIntegerField"
    finally:
        del router.routers


@BOTH
def test_conversion_widens_an_object_id_a_multi_table_child_inherits(convapp: ConvApp) -> None:
    """The child's GenericForeignKey names its parent's column: widened once, in the parent."""
    from idfields.migrations.django._convert import generic_object_ids

    app = convapp
    app.migrate("0001_initial", app="gfkapp")
    tables = [table for _, table, _ in generic_object_ids() if table.startswith("gfkapp_")]
    assert tables == ["gfkapp_taggeditem"]
    assert generic_object_ids("gfkapp", "TaggedNote") == [(None, "gfkapp_taggeditem", "object_id")]
    assert generic_object_ids("gfkapp") == [(None, "gfkapp_taggeditem", "object_id")]  # the app
    assert WidenObjectId("gfkapp").deconstruct()[1:] == (["gfkapp"], {})
