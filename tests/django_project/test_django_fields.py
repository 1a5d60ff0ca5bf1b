"""The ID fields on PostgreSQL, SQLite and MariaDB: every insert path knows its pk before the
INSERT, a new object's save() is one query, and the stored value is the Python-side one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connections, models
from django.db.migrations.state import ProjectState
from django.test import override_settings
from django.test.utils import CaptureQueriesContext, isolate_apps

from idfields.django_app.fields import (
    DecimalIdField,
    IdFormField,
    KSortedAutoField,
    KSortedIdField,
    SnowflakeAutoField,
    SnowflakeField,
)
from idfields.layouts import MAX_ID, MAX_JS_SAFE_ID, get_layout
from tests.django_project.conftest import ALIASES
from tests.django_project.testapp.models import (
    Author,
    Book,
    Comment,
    Event,
    Ledger,
    Pizzeria,
    Place,
    Restaurant,
    Row,
    Tag,
)

pytestmark = pytest.mark.django_db(databases=ALIASES)


def stored(alias: str, model: type[models.Model], pk: int) -> list[int]:
    """The pk column as the database holds it, read with raw SQL (no ORM conversion)."""
    connection = connections[alias]
    table, column = model._meta.db_table, model._meta.pk.column
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {quote(column)} FROM {quote(table)} WHERE {quote(column)} = %s",  # noqa: S608
            [pk],
        )
        return [row[0] for row in cursor.fetchall()]


def recent(layout: str, value: int) -> bool:
    """``value`` decodes in ``layout`` to a valid ID made in the last minute."""
    decoded = get_layout(layout).decode(value)
    now = datetime.now(UTC)
    return (
        decoded.in_layout
        and decoded.time is not None
        and abs(now - decoded.time) < timedelta(minutes=1)
    )


def test_every_insert_path_assigns_the_pk_before_the_insert(alias: str) -> None:
    author = Author(name="save")
    assert author.pk is None  # nothing is drawn for objects that are never saved
    author.save(using=alias)
    created = Author.objects.using(alias).create(name="create")
    got, made = Author.objects.using(alias).get_or_create(name="get_or_create")
    updated, _ = Author.objects.using(alias).update_or_create(name="uoc", defaults={"name": "uoc"})
    bulk = Author.objects.using(alias).bulk_create([Author(name=f"bulk{i}") for i in range(5)])
    assert made
    for obj in [author, created, got, updated, *bulk]:
        assert recent("snowflake", obj.pk)
        assert stored(alias, Author, obj.pk) == [obj.pk]
        assert not obj._state.adding

    tag = Tag.objects.using(alias).create(label="t")
    book = Book.objects.using(alias).create(author=author, title="b")
    book.tags.add(tag)
    through = Book.tags.through.objects.using(alias).get()
    assert recent("traceid", tag.pk)
    assert recent("snowflake", through.pk) and stored(alias, Book.tags.through, through.pk)
    assert recent("snowflake", book.public_id)  # a non-pk ID column, filled on insert
    assert Book.objects.using(alias).get(public_id=book.public_id) == book

    restaurant = Restaurant.objects.using(alias).create(name="r", serves_pizza=True)
    assert recent("snowflake", restaurant.pk)
    assert stored(alias, Place, restaurant.pk) == stored(alias, Restaurant, restaurant.pk)

    ledger = Ledger.objects.using(alias).create(amount=1)
    assert get_layout("decimal").decode(ledger.pk).in_layout
    assert stored(alias, Ledger, ledger.pk) == [ledger.pk]


def test_saving_a_new_object_is_one_insert(alias: str) -> None:
    connection = connections[alias]
    author = Author.objects.using(alias).create(name="a")
    for make in (
        lambda: Author(name="x").save(using=alias),
        lambda: Author.objects.using(alias).create(name="y"),
        lambda: Book(author=author, title="t").save(using=alias),
        lambda: Ledger(amount=2).save(using=alias),
    ):
        with CaptureQueriesContext(connection) as queries:
            make()
        assert [q["sql"].split()[0] for q in queries] == ["INSERT"], queries.captured_queries
    with CaptureQueriesContext(connection) as queries:
        Restaurant(name="mti").save(using=alias)
    assert [q["sql"].split()[0] for q in queries] == ["INSERT", "INSERT"]


def test_bulk_create_of_10000_rows_sets_every_pk(alias: str) -> None:
    rows = Row.objects.using(alias).bulk_create([Row(value=i) for i in range(10_000)])
    pks = [row.pk for row in rows]
    assert pks == sorted(set(pks)) and len(pks) == 10_000  # distinct and in creation order
    in_db = dict(Row.objects.using(alias).values_list("value", "pk"))
    assert in_db == {row.value: row.pk for row in rows}


def test_foreign_keys_and_generic_keys_hold_63_bit_ids(alias: str) -> None:
    big = MAX_ID - 12345  # wider than any 32-bit column and than a float's 53 bits
    author = Author.objects.using(alias).create(pk=big, name="big")
    book = Book.objects.using(alias).create(author=author, title="t", public_id=big - 1)
    comment = Comment.objects.using(alias).create(target=author, text="c")
    fresh = Book.objects.using(alias).select_related("author").get(pk=book.pk)
    assert (fresh.author_id, fresh.author.pk, fresh.public_id) == (big, big, big - 1)
    assert Comment.objects.using(alias).get(pk=comment.pk).object_id == big
    connection = connections[alias]
    bigint = models.BigIntegerField().db_type(connection)
    fks = [Book._meta.get_field("author"), *Book.tags.through._meta.local_fields[1:]]
    assert {field.db_type(connection) for field in fks} == {bigint}
    # A plain bigint, no identity / AUTO_INCREMENT / rowid: nothing but our field numbers rows
    assert Author._meta.pk.db_parameters(connection)["type"] == bigint
    assert Author._meta.pk.db_type_suffix(connection) is None


def test_ksorted_fields_follow_the_layout_setting_at_first_use(alias: str) -> None:
    event = Event.objects.using(alias).create()
    assert recent("snowflake", event.pk)
    assert 0 < event.js_id <= MAX_JS_SAFE_ID and recent("snowflake_js", event.js_id)
    with override_settings(IDFIELDS={"NODE_SOURCE": "static", "NODE": 3, "LAYOUT": "traceid"}):
        event = Event.objects.using(alias).create()
        assert recent("traceid", event.pk)
        assert get_layout("traceid").decode(event.pk).values["node_no"] == 3


def test_a_form_round_trips_ids_beyond_2_53() -> None:
    from django.forms import modelform_factory

    big = MAX_ID - 1  # 2**63 - 2 as a float is 2**63: any float step would change it
    author = Author.objects.create(name="a")
    book = Book.objects.create(author=author, title="t", public_id=big)
    form_class = modelform_factory(Book, fields=["title", "public_id", "author"])
    html = form_class(instance=book).as_p()
    assert f'value="{big}"' in html and 'type="number"' not in html
    form = form_class(
        {"title": "t2", "public_id": str(big), "author": str(author.pk)}, instance=book
    )
    assert form.is_valid(), form.errors
    form.save()
    book.refresh_from_db()
    assert (book.public_id, book.author_id, book.title) == (big, author.pk, "t2")
    blank = form_class({"title": "new", "public_id": "", "author": str(author.pk)})
    assert blank.is_valid(), blank.errors
    assert recent("snowflake", blank.save().public_id)  # left blank: made on insert


def test_deconstruct_emits_only_what_differs_from_the_defaults() -> None:
    path = "idfields.django_app.fields."
    cases: list[tuple[Any, str, dict[str, Any]]] = [
        (SnowflakeAutoField(primary_key=True), "SnowflakeAutoField", {"primary_key": True}),
        (
            KSortedAutoField(primary_key=True, layout="x"),
            "KSortedAutoField",
            {"primary_key": True, "layout": "x"},
        ),
        (SnowflakeField(), "SnowflakeField", {}),
        (
            SnowflakeField(blank=False, unique=True),
            "SnowflakeField",
            {"blank": False, "unique": True},
        ),
        (DecimalIdField(layout="decimal"), "DecimalIdField", {}),
        (
            KSortedIdField(layout="snowflake_js", null=True),
            "KSortedIdField",
            {"layout": "snowflake_js", "null": True},
        ),
        (
            SnowflakeAutoField(primary_key=True, generation="db"),
            "SnowflakeAutoField",
            {"primary_key": True, "generation": "db"},
        ),
    ]
    for field, name, kwargs in cases:
        _, got_path, args, got = field.deconstruct()
        assert (got_path, args, got) == (path + name, [], kwargs)
        rebuilt = type(field)(*args, **got)
        assert rebuilt.deconstruct()[1:] == field.deconstruct()[1:]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"default": 5}, "drop default="),
        ({"db_default": 5}, "drop db_default="),
        ({"generation": "sometimes"}, "use 'app' or 'db'"),
        ({"generation": "db", "layout": "globalid"}, "cannot be generated inside PostgreSQL"),
        ({"layout": get_layout("snowflake")}, "takes the name of a layout"),
    ],
)
def test_bad_field_arguments_name_the_fix(kwargs: dict[str, Any], error: str) -> None:
    with pytest.raises((TypeError, ValueError), match=error):
        KSortedIdField(**kwargs)


def test_makemigrations_stays_quiet_after_settings_changes() -> None:
    call_command("makemigrations", check=True, dry_run=True, verbosity=0)
    user_layouts = {"mine": "idfields.layouts._builtin.SNOWFLAKE_JS"}
    with override_settings(IDFIELDS={"LAYOUT": "traceid", "NODE": 9, "LAYOUTS": user_layouts}):
        call_command("makemigrations", check=True, dry_run=True, verbosity=0)


def test_form_field_is_a_text_input_parsed_without_floats() -> None:
    field = IdFormField()
    assert field.clean(f"{MAX_ID}") == MAX_ID
    assert field.widget.attrs["inputmode"] == "numeric"
    with pytest.raises(Exception, match="less than or equal"):
        field.clean(str(MAX_ID + 1))


@pytest.mark.django_db(databases=["default"])
def test_generation_db_lets_postgres_fill_the_pk() -> None:
    connection = connections["default"]
    if connection.vendor != "postgresql":
        pytest.skip("generation='db' is PostgreSQL only")
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regprocedure('idfields.next_snowflake()') IS NOT NULL")
        installed = cursor.fetchone()[0]
    if not installed:  # another suite dropped them: install them in this test's transaction
        from idfields import sql
        from idfields.migrations.django import InstallIdFunctions

        with connection.schema_editor() as editor:
            operation = InstallIdFunctions(sql.VERSION)
            operation.database_forwards("testapp", editor, ProjectState(), ProjectState())

    with isolate_apps("tests.django_project.testapp"):

        class DbSide(models.Model):
            id = SnowflakeAutoField(primary_key=True, generation="db")
            name = models.CharField(max_length=10)

            class Meta:
                app_label = "testapp"

        with connection.schema_editor() as editor:
            editor.create_model(DbSide)
        obj = DbSide(name="one")
        assert obj.pk is None
        with CaptureQueriesContext(connection) as queries:
            obj.save()
        assert len(queries) == 1 and "RETURNING" in queries[0]["sql"]
        bulk = DbSide.objects.bulk_create([DbSide(name=str(i)) for i in range(3)])
        assert all(recent("snowflake", row.pk) for row in [obj, *bulk])
        assert sorted(DbSide.objects.values_list("pk", flat=True)) == sorted(
            row.pk for row in [obj, *bulk]
        )


def test_the_migration_log_takes_ids_before_the_lease_table_exists(alias: str) -> None:
    """django_migrations gets its pk from DEFAULT_AUTO_FIELD, and its first rows are written
    before idfields' own migration creates the lease table: a fixed node serves that table."""
    from django.db.migrations.recorder import MigrationRecorder

    rows = MigrationRecorder(connections[alias]).migration_qs.order_by("pk")
    pks = list(rows.values_list("pk", flat=True))
    assert isinstance(MigrationRecorder.Migration._meta.pk, SnowflakeAutoField)
    assert len(pks) > 10 and pks == sorted(set(pks))
    first = [app for (app,) in rows.values_list("app")[:3]]
    assert "idfields" not in first  # written before the idfields tables existed
    assert {get_layout("snowflake").decode(pk).values["node"] for pk in pks} == {0}


def statements(alias: str, action: Any) -> list[str]:
    """The first word of each statement ``action()`` runs on ``alias``."""
    with CaptureQueriesContext(connections[alias]) as queries:
        action()
    return [q["sql"].split()[0] for q in queries]


def test_a_pk_the_caller_sets_is_updated_first_as_with_bigautofield(alias: str) -> None:
    place = Place.objects.using(alias).create(name="old")
    assert statements(alias, lambda: Place(pk=place.pk, name="new").save(using=alias)) == ["UPDATE"]
    assert Place.objects.using(alias).get().name == "new"
    chosen = place.pk + 1  # set by the caller, no such row yet: UPDATE finds none, then INSERT
    assert statements(alias, lambda: Place(pk=chosen, name="x").save(using=alias)) == [
        "UPDATE",
        "INSERT",
    ]
    assert Place.objects.using(alias).count() == 2


def test_a_multi_table_child_reuses_an_existing_parent_row(alias: str) -> None:
    """django-polymorphic's upcasting: a child row added under an existing parent."""
    place = Place.objects.using(alias).create(name="corner")
    restaurant = Restaurant(place_ptr=place, name="corner bistro", serves_pizza=True)
    restaurant.save(using=alias)
    assert restaurant.pk == place.pk and Place.objects.using(alias).count() == 1
    fresh = Restaurant.objects.using(alias).get(pk=place.pk)
    assert (fresh.name, fresh.serves_pizza) == ("corner bistro", True)
    # New children still take a fresh ID with one INSERT per table, after any earlier save path.
    Place(name="forced").save(using=alias, force_insert=True)
    assert statements(alias, lambda: Restaurant(name="new").save(using=alias)) == [
        "INSERT",
        "INSERT",
    ]


def test_the_migration_log_keeps_an_auto_increment_key(alias: str) -> None:
    """django_migrations takes DEFAULT_AUTO_FIELD; its key stays the database's counter."""
    from django.db.migrations.recorder import MigrationRecorder

    recorder = MigrationRecorder(connections[alias])
    field = recorder.Migration._meta.pk
    assert isinstance(field, SnowflakeAutoField) and field.get_internal_type() == "BigAutoField"
    row = recorder.migration_qs.create(app="idfields_test", name="0001_probe")
    assert 0 < row.pk < 2**31  # numbered by the database, as under AutoField


def test_an_instance_marked_as_new_again_is_updated_as_with_bigautofield(alias: str) -> None:
    """Once saved, the pk is no longer one we just made: ``_state.adding = True`` and save()
    tries the UPDATE first (it finds the row), as BigAutoField does, instead of an INSERT
    that collides with the row."""
    place = Place.objects.using(alias).create(name="first")
    place.name = "renamed"
    place._state.adding = True
    assert statements(alias, lambda: place.save(using=alias)) == ["UPDATE"]
    assert list(Place.objects.using(alias).values_list("name", flat=True)) == ["renamed"]


def test_django_copy_recipe_on_a_two_level_multi_table_child(alias: str) -> None:
    """Django's documented copy of an inherited instance: ``pk = None; id = None;
    _state.adding = True; save()`` (the middle link keeps pointing at the original)."""
    pizzeria = Pizzeria.objects.using(alias).create(name="Luigi", oven="gas")
    original = pizzeria.pk
    pizzeria.pk = None
    pizzeria.id = None
    pizzeria._state.adding = True
    pizzeria.save(using=alias)
    assert pizzeria.pk == original  # as with BigAutoField: the child row follows its parent
    assert Pizzeria.objects.using(alias).get(pk=original).oven == "gas"
    assert Place.objects.using(alias).count() == 1


def test_bulk_create_ignore_conflicts_leaves_no_pk_no_row_has(alias: str) -> None:
    """Django documents that ``ignore_conflicts`` does not set the pk (which rows went in is
    unknown): a skipped instance must not keep an ID no row has, and BigAutoField leaves every
    pk None, so ours do too, at no extra query."""
    existing = Tag.objects.using(alias).create(label="taken")
    skipped, added = Tag(label="taken"), Tag(label="free")
    queries = statements(
        alias, lambda: Tag.objects.using(alias).bulk_create([skipped, added], ignore_conflicts=True)
    )
    assert len(queries) == 1
    assert skipped.pk is None and added.pk is None
    rows = dict(Tag.objects.using(alias).values_list("label", "pk"))
    assert rows.keys() == {"taken", "free"} and rows["taken"] == existing.pk


def test_bulk_create_update_conflicts_gives_the_updated_rows_pk(alias: str) -> None:
    """With ``update_conflicts`` an instance that updated a row takes that row's pk (what
    BigAutoField reads back by RETURNING on PostgreSQL and MariaDB, where no ``unique_fields``
    are given: the row met on any of the model's unique keys), never an ID no row has."""
    connection = connections[alias]
    existing = Tag.objects.using(alias).create(label="taken")
    updated, added = Tag(label="taken"), Tag(label="free")
    options: dict[str, Any] = {"update_conflicts": True, "update_fields": ["label"]}
    if connection.features.supports_update_conflicts_with_target:
        options["unique_fields"] = ["label"]
    Tag.objects.using(alias).bulk_create([updated, added], **options)
    present = set(Tag.objects.using(alias).values_list("pk", flat=True))
    assert present == {existing.pk, added.pk}
    assert updated.pk == existing.pk


def test_a_save_that_fails_before_its_insert_is_retried_as_with_bigautofield(alias: str) -> None:
    """Django refuses an F() expression on an unsaved object before any query; the retry must
    do the same (BigAutoField's pk is still None, so no UPDATE is tried inside the transaction
    that the first failure marked for rollback)."""
    from django.db import transaction
    from django.db.models import F

    ledger = Ledger(amount=F("amount") + 1)
    with transaction.atomic(using=alias):
        for _ in range(2):
            with (
                CaptureQueriesContext(connections[alias]) as queries,
                pytest.raises(ValueError, match="F\\(\\) expressions can only be used to upd"),
            ):
                ledger.save(using=alias)
            assert len(queries) == 0
    ledger.amount = 3
    assert statements(alias, lambda: ledger.save(using=alias)) == ["INSERT"]
    assert Ledger.objects.using(alias).get(pk=ledger.pk).amount == 3
    assert statements(alias, lambda: ledger.save(using=alias)) == ["UPDATE"]


def test_the_bulk_create_wrapper_passes_djangos_parameters_in_djangos_order() -> None:
    """The wrapper calls Django's bulk_create positionally: a new or moved parameter in a Django
    release must fail here, not shift every argument silently."""
    import inspect

    from django.db.models import QuerySet

    original = inspect.unwrap(QuerySet.bulk_create)
    assert original is not QuerySet.bulk_create  # wrapped when the app was ready
    assert list(inspect.signature(original).parameters) == [
        *("self", "objs", "batch_size", "ignore_conflicts", "update_conflicts"),
        *("update_fields", "unique_fields"),
    ]


def test_a_zero_key_is_refused_where_auto_increment_would_number_it(alias: str) -> None:
    """MariaDB/MySQL's AUTO_INCREMENT takes 0 as "number this row": BigAutoField refuses it
    before the INSERT, and so do we, whatever the column (Django's own suite expects it)."""
    from django.db import transaction

    if connections[alias].vendor == "mysql":
        with (
            pytest.raises(ValueError, match="does not accept 0 as a value for AutoField"),
            transaction.atomic(using=alias),
        ):
            Author.objects.using(alias).create(pk=0, name="zero")
        assert not Author.objects.using(alias).exists()
    else:
        Author.objects.using(alias).create(pk=0, name="zero")
        assert stored(alias, Author, 0) == [0]
