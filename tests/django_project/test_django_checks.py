"""Each system check fires for its misconfiguration, and the test project passes them all."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.contenttypes.fields import GenericForeignKey, GenericRelation
from django.contrib.contenttypes.models import ContentType
from django.core import checks
from django.db import models
from django.test import override_settings
from django.test.utils import isolate_apps

from idfields.django_app.checks import check_models, check_settings
from idfields.django_app.fields import KSortedIdField, SnowflakeAutoField
from idfields.django_app.unwidened import check_unwidened_fields
from idfields.layouts import Layout, Node, Sequence, Timestamp

# A user layout whose 30-bit seconds end about 5 years from now.
SOON = Layout(
    "soon",
    [
        Timestamp(
            30, unit="s", epoch=datetime.now(UTC) - timedelta(seconds=2**30 - 5 * 365 * 86400)
        ),
        Node(10),
        Sequence(20),
    ],
)


def setting_ids(**idfields: Any) -> set[str]:
    with override_settings(IDFIELDS=idfields):
        return {message.id for message in check_settings(None)}


@pytest.mark.postgres  # the project's "default" is PostgreSQL (its generation="db" models)
def test_the_test_project_passes_every_check() -> None:
    found = [
        m
        for m in checks.run_checks(include_deployment_checks=False)
        if m.id.startswith("idfields.")
    ]
    assert found == []
    assert check_settings in checks.registry.registry.registered_checks  # registered by the app
    assert check_models in checks.registry.registry.registered_checks


@pytest.mark.parametrize(
    ("idfields", "expected"),
    [
        ({"NODE_SORCE": "static"}, "idfields.E001"),
        ({"NODE_SOURCE": "zookeeper"}, "idfields.E002"),
        ({"NODE_SOURCE": "static"}, "idfields.E003"),
        ({"NODE": 1024}, "idfields.E004"),  # snowflake nodes are 0..1023
        ({"NODE": -1}, "idfields.E004"),
        ({"NODE_SOURCE": "development"}, "idfields.E005"),
        ({"NODE_SOURCE": "lease", "DATABASE": "replica"}, "idfields.E006"),
        ({"LAYOUT": "snowflak"}, "idfields.E007"),
        ({"LAYOUTS": {"bad": "idfields.layouts.no_such_layout"}}, "idfields.E007"),
        ({"LAYOUTS": {"bad": 42}}, "idfields.E008"),
        ({"NODE_SOURCE": "env"}, "idfields.W001"),
        ({"NODE": 1, "LAYOUTS": {"soon": SOON}}, "idfields.W002"),
        ({"NODE": 1, "JS_SAFE": True}, "idfields.W003"),
    ],
)
def test_each_settings_check_fires(
    idfields: dict[str, Any], expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("IDFIELDS_DEVELOPMENT", raising=False)
    monkeypatch.delenv("IDFIELDS_NODE_ID", raising=False)
    assert expected in setting_ids(**idfields)


def test_messages_say_what_to_change(monkeypatch: pytest.MonkeyPatch) -> None:
    with override_settings(IDFIELDS={"NODE": 5000}):
        messages = {m.msg.split("layout ")[1].split(":")[0]: m for m in check_settings(None)}
    snowflake = messages["'snowflake'"]  # one message per layout the node does not fit
    assert snowflake.id == "idfields.E004" and "node 0..1023" in snowflake.hint
    monkeypatch.setenv("IDFIELDS_NODE_ID", "4")
    with override_settings(IDFIELDS={"NODE_SOURCE": "env"}):
        [missing] = check_settings(None)  # the models' DecimalId columns need two more
    assert "IDFIELDS_GENERATOR_ID, IDFIELDS_LAUNCH_ID" in missing.msg
    monkeypatch.setenv("IDFIELDS_GENERATOR_ID", "1")
    monkeypatch.setenv("IDFIELDS_LAUNCH_ID", "1")
    assert setting_ids(NODE_SOURCE="env") == set()
    monkeypatch.setenv("IDFIELDS_DEVELOPMENT", "1")
    assert setting_ids(NODE_SOURCE="development") == set()


def test_a_static_node_must_fit_every_layout_in_use() -> None:
    """The settings' layout and the models' (snowflake_js has nodes 0..63 only)."""
    with override_settings(IDFIELDS={"NODE": 100, "LAYOUT": "traceid"}):
        unfit = {m.msg.split("layout ")[1].split(":")[0] for m in check_settings(None)}
    assert unfit == {"'snowflake_js'"}
    assert setting_ids(NODE=40, LAYOUT="traceid") == set()


class NarrowForeignKey(models.ForeignKey):  # type: ignore[type-arg]
    def db_type(self, connection: Any) -> str:
        return "integer"


def model_messages(apps: Any) -> list[checks.CheckMessage]:
    """What a plain ``check`` (no database) says of the isolated test app."""
    config = [apps.get_app_config("testapp")]
    return [*check_models(config), *check_unwidened_fields(config)]


def model_ids(apps: Any) -> list[tuple[str, str]]:
    return sorted((m.id, str(m.obj)) for m in model_messages(apps))


@pytest.mark.postgres  # the check reads the default database's columns
@isolate_apps("tests.django_project.testapp", kwarg_name="apps")
def test_narrow_generic_object_ids_and_foreign_keys_are_errors(apps: Any = None) -> None:
    class Target(models.Model):
        id = SnowflakeAutoField(primary_key=True)

        class Meta:
            app_label = "testapp"

    class Tagged(models.Model):
        content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE)
        object_id = models.PositiveIntegerField()
        target = GenericForeignKey("content_type", "object_id")
        wide_type = models.ForeignKey(ContentType, on_delete=models.CASCADE, related_name="+")
        wide_id = models.PositiveBigIntegerField()
        wide = GenericForeignKey("wide_type", "wide_id")
        text_id = models.TextField()  # what admin.LogEntry does: any key fits in text
        as_text = GenericForeignKey("content_type", "text_id")
        owner = NarrowForeignKey(Target, on_delete=models.CASCADE)
        fine = models.ForeignKey(Target, on_delete=models.CASCADE, related_name="+")

        class Meta:
            app_label = "testapp"

    found = model_ids(apps)
    assert found == [
        ("idfields.E021", "testapp.Tagged.owner"),  # the field class: no migration clears it
        ("idfields.W021", "testapp.Tagged.object_id"),  # the database may be widened already
    ]
    [message] = [m for m in model_messages(apps) if m.id == "idfields.W021"]
    assert "PositiveBigIntegerField" in message.hint and "integer out of range" in message.msg
    assert "WidenObjectId('testapp', 'Tagged')" in message.hint


@isolate_apps("tests.django_project.testapp")
def test_field_checks_name_the_layout_and_the_database() -> None:
    class Bad(models.Model):
        id = SnowflakeAutoField(primary_key=True, generation="db")
        code = KSortedIdField(layout="nope")

        class Meta:
            app_label = "testapp"

    messages = Bad.check(databases=["sqlite"])
    found = sorted((m.id, m.obj.name) for m in messages if m.id.startswith("idfields."))
    assert found == [("idfields.E030", "code"), ("idfields.E031", "id")]
    assert "'sqlite' is sqlite" in next(m.msg for m in messages if m.id == "idfields.E031")


@pytest.mark.postgres  # "default" is the project's PostgreSQL alias
@isolate_apps("tests.django_project.testapp")
def test_plain_check_names_generation_db_off_postgresql() -> None:
    """`manage.py check` (no --database) reports E031 too, not only `migrate`."""

    class DbSide(models.Model):
        id = SnowflakeAutoField(primary_key=True, generation="db")

        class Meta:
            app_label = "testapp"

    found = {m.msg.split("database ")[1].split(" is")[0] for m in DbSide.check(databases=None)}
    assert found == {"'sqlite'", "'mysql'"}  # every alias but the PostgreSQL one


@pytest.mark.postgres  # the check reads the default database's columns
@isolate_apps("tests.django_project.testapp", kwarg_name="apps")
def test_e020_names_a_column_once_however_many_children_inherit_it(apps: Any = None) -> None:
    class Target(models.Model):
        id = SnowflakeAutoField(primary_key=True)

        class Meta:
            app_label = "testapp"

    class Note(models.Model):
        content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE)
        object_id = models.PositiveIntegerField()
        target = GenericForeignKey("content_type", "object_id")

        class Meta:
            app_label = "testapp"

    class Memo(Note):
        class Meta:
            app_label = "testapp"

    class Reminder(Note):
        class Meta:
            app_label = "testapp"

    assert model_ids(apps) == [("idfields.W021", "testapp.Note.object_id")]


@pytest.mark.django_db(databases=["default"])
def test_w011_names_each_narrow_database_column_once() -> None:
    """`check --database default` reads the columns: a pk, a foreign key and a GFK object_id
    that the migrations left int4 while the models say bigint (PostgreSQL DDL rolls back)."""
    from django.db import connections

    from idfields.django_app.key_checks import check_database_columns

    assert check_database_columns(databases=["default"]) == []
    with connections["default"].cursor() as cursor:
        for table, column in (
            ("testapp_place", "id"),  # shared by Restaurant through its parent link
            ("testapp_book", "author_id"),
            ("testapp_comment", "object_id"),
        ):
            cursor.execute(f'ALTER TABLE "{table}" ALTER COLUMN "{column}" TYPE integer')
    messages = check_database_columns(databases=["default"])
    assert sorted(str(m.obj) for m in messages) == [
        "default:testapp_book.author_id",
        "default:testapp_comment.object_id",
        "default:testapp_place.id",
    ]
    assert {m.id for m in messages} == {"idfields.W011"}
    assert all("bigint" in m.hint and "makemigrations testapp" in m.hint for m in messages)
    assert check_database_columns(databases=None) == []  # plain `check` reads no database


def test_w010_leaves_apps_that_pin_their_keys_on_purpose_alone() -> None:
    """contrib.auth & co. set default_auto_field = AutoField; their migrations say so."""
    from django.apps import apps

    from idfields.django_app.key_checks import check_app_key_overrides

    assert apps.get_app_config("auth")._is_default_auto_field_overridden  # type: ignore[attr-defined]
    assert check_app_key_overrides(None) == []
    with override_settings(DEFAULT_AUTO_FIELD="django.db.models.BigAutoField"):
        assert check_app_key_overrides(None) == []  # only while DEFAULT_AUTO_FIELD is ours


@pytest.mark.django_db(transaction=True)
def test_a_launch_past_half_its_generator_ids_warns() -> None:
    from idfields.coordination import record_launch
    from idfields.django_app.checks import check_launch_room
    from idfields.django_app.sources import coordination_database

    db = coordination_database()
    launch = record_launch(db, "checks test")
    name = f"generator:{launch}"
    try:
        with override_settings(IDFIELDS={"LAYOUT": "decimal", "NODE_SOURCE": "lease"}):
            db.execute("INSERT INTO idfields_counter (name, value) VALUES (%s, %s)", [name, 50_000])
            assert check_launch_room(databases=["default"]) == []
            db.execute("UPDATE idfields_counter SET value = %s WHERE name = %s", [50_001, name])
            [warning] = check_launch_room(databases=["default"])
            assert warning.id == "idfields.W020" and "50,001 of its 100,000" in warning.msg
            assert check_launch_room(databases=None) == []  # only with --database
    finally:
        db.close()  # the lease connection, so the test database can be dropped


@pytest.mark.postgres  # the check reads the default database's columns
@isolate_apps("tests.django_project.testapp", kwarg_name="apps")
def test_multi_column_foreign_objects_are_checked_column_by_column(apps: Any = None) -> None:
    """A ForeignObject of two columns has no single target: every check still runs, and each
    of its local columns that holds our IDs must be bigint (E021 names the narrow one)."""
    from idfields.django_app.key_checks import check_database_columns

    class Membership(models.Model):
        id = SnowflakeAutoField(primary_key=True)
        group_code = models.CharField(max_length=10)

        class Meta:
            app_label = "testapp"
            unique_together = [("id", "group_code")]

    class Badge(models.Model):
        membership_id = models.IntegerField()  # holds Membership.id: 63-bit IDs overflow it
        group_code = models.CharField(max_length=10)
        membership = models.ForeignObject(
            Membership,
            on_delete=models.CASCADE,
            from_fields=["membership_id", "group_code"],
            to_fields=["id", "group_code"],
        )
        wide_id = models.BigIntegerField()
        wide = models.ForeignObject(
            Membership,
            on_delete=models.CASCADE,
            from_fields=["wide_id", "group_code"],
            to_fields=["id", "group_code"],
            related_name="+",
        )

        class Meta:
            app_label = "testapp"

    assert model_ids(apps) == [("idfields.W022", "testapp.Badge.membership_id")]
    config = [apps.get_app_config("testapp")]
    assert check_database_columns(config, databases=None) == []
    [message] = [m for m in model_messages(apps) if m.id == "idfields.W022"]
    assert "BigIntegerField" in message.hint and "membership" in message.msg


@isolate_apps("tests.django_project.testapp")
def test_w010_names_project_apps_not_apps_checked_out_elsewhere(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An app outside the project's folder (a third-party checkout on the path) pins its keys
    as its own migrations say: deleting a line of its apps.py is no advice for its user."""
    import importlib

    from django.apps import AppConfig, apps

    from idfields.django_app.key_checks import check_app_key_overrides

    class Numbered(models.Model):
        id = models.BigAutoField(primary_key=True, auto_created=True)

        class Meta:
            app_label = "testapp"

    (tmp_path / "vendored_app").mkdir()
    (tmp_path / "vendored_app" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))

    def pinned(name: str) -> AppConfig:
        class Pinned(AppConfig):
            default_auto_field = "django.db.models.BigAutoField"

        config = Pinned(name, importlib.import_module(name))
        config.apps, config.models = apps, {"numbered": Numbered}
        return config

    assert check_app_key_overrides([pinned("vendored_app")]) == []
    [message] = check_app_key_overrides([pinned("tests.django_project.testapp")])
    assert message.id == "idfields.W010" and "apps.py" in message.hint


@pytest.mark.django_db(databases=["default"])  # the database checks read it
@isolate_apps("tests.django_project.testapp", kwarg_name="apps")
def test_a_generic_foreign_key_naming_no_field_leaves_the_report_to_django(
    apps: Any = None,
) -> None:
    """Django's contenttypes.E001 names the missing object_id field; our checks skip what they
    cannot read instead of aborting ``check`` with FieldDoesNotExist."""
    from idfields.django_app.widening import generic_object_ids

    class Broken(models.Model):
        content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE)
        content_object = GenericForeignKey("content_type", "missing")

        class Meta:
            app_label = "testapp"

    config = [apps.get_app_config("testapp")]
    found = {m.id for m in checks.run_checks(app_configs=config, databases=["default"])}
    assert "contenttypes.E001" in found
    assert list(generic_object_ids([Broken])) == []


@pytest.mark.postgres  # the check reads the default database's columns
@isolate_apps("tests.django_project.testapp", kwarg_name="apps")
def test_an_object_id_reached_only_through_a_generic_relation_is_checked(
    apps: Any = None,
) -> None:
    """django-reversion's shape: the model holding object_id has no GenericForeignKey."""

    class Note(models.Model):
        content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE)
        object_id = models.PositiveIntegerField()

        class Meta:
            app_label = "testapp"

    class Item(models.Model):
        id = SnowflakeAutoField(primary_key=True)
        notes = GenericRelation(Note)

        class Meta:
            app_label = "testapp"

    assert model_ids(apps) == [("idfields.W021", "testapp.Note.object_id")]
