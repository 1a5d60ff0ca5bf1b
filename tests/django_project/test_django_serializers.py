"""JSON keeps every digit; IDS_AS_STRINGS writes ID columns (and keys pointing at them) as
strings for JavaScript, and loading takes them back."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core import serializers
from django.core.management import call_command
from django.test import override_settings

from idfields.django_app.serializers import JsSafeJSONEncoder
from idfields.layouts import MAX_ID, MAX_JS_SAFE_ID
from tests.django_project.testapp.models import Author, Book, Event, Restaurant, Tag

pytestmark = pytest.mark.django_db
MODULES = {"json": "idfields.django_app.serializers"}
BIG = MAX_ID - 7  # > 2**53 - 1: JavaScript's JSON.parse would change it


@pytest.fixture
def book() -> Book:
    author = Author.objects.create(pk=BIG, name="a")
    book = Book.objects.create(pk=BIG - 1, author=author, title="t", public_id=BIG - 2)
    book.tags.add(Tag.objects.create(label="x"))
    return book


def dump(*objects: object, **options: object) -> list[dict[str, object]]:
    with override_settings(SERIALIZATION_MODULES=MODULES):
        loaded: list[dict[str, object]] = json.loads(
            serializers.serialize("json", objects, **options)
        )
    return loaded


def test_plain_json_keeps_full_precision(book: Book) -> None:
    [data] = dump(book)
    assert data["pk"] == BIG - 1 and data["fields"]["author"] == BIG  # type: ignore[index]
    assert data["fields"]["public_id"] == BIG - 2  # type: ignore[index]


def test_ids_as_strings_covers_pks_ids_fks_and_m2m(book: Book) -> None:
    tag = book.tags.get()
    [data] = dump(book, ids_as_strings=True)
    fields = data["fields"]
    assert data["pk"] == str(BIG - 1)
    assert fields == {
        "author": str(BIG),
        "tags": [str(tag.pk)],
        "title": "t",
        "public_id": str(BIG - 2),
        "trace": str(book.trace),  # filled on insert, though nullable
    }
    restaurant = Restaurant.objects.create(name="r")
    [parent, child] = dump(restaurant.place_ptr, restaurant, ids_as_strings=True)
    assert child["pk"] == parent["pk"] == str(restaurant.pk)  # the MTI link is an ID too


def test_the_setting_switches_it_and_loading_takes_strings_back(book: Book) -> None:
    with override_settings(IDFIELDS={"IDS_AS_STRINGS": True}, SERIALIZATION_MODULES=MODULES):
        text = serializers.serialize("json", [book])
        assert json.loads(text)[0]["pk"] == str(BIG - 1)
        Book.objects.filter(pk=book.pk).update(title="changed", public_id=1)
        [restored] = list(serializers.deserialize("json", text))
        restored.save()
    book.refresh_from_db()
    assert (book.title, book.public_id, book.author_id) == ("t", BIG - 2, BIG)
    assert len(dump(book, ids_as_strings=False)[0]["fields"]["tags"]) == 1  # type: ignore[index,arg-type]


def test_dumpdata_uses_the_registered_module(book: Book) -> None:
    out = StringIO()
    with override_settings(IDFIELDS={"IDS_AS_STRINGS": True}, SERIALIZATION_MODULES=MODULES):
        call_command("dumpdata", "testapp.author", stdout=out)
    assert json.loads(out.getvalue())[0]["pk"] == str(BIG)


def test_a_js_safe_layout_stays_numeric(book: Book) -> None:
    event = Event.objects.create()
    [data] = dump(event)
    assert isinstance(data["fields"]["js_id"], int) and data["fields"]["js_id"] <= MAX_JS_SAFE_ID  # type: ignore[index,operator]


def test_js_safe_encoder_turns_only_unsafe_integers_into_strings() -> None:
    payload = {
        "id": BIG,
        "ids": [MAX_JS_SAFE_ID, MAX_JS_SAFE_ID + 1, -MAX_JS_SAFE_ID - 1],
        "ok": True,
    }
    text = json.dumps(payload, cls=JsSafeJSONEncoder)
    assert json.loads(text) == {
        "id": str(BIG),
        "ids": [MAX_JS_SAFE_ID, str(MAX_JS_SAFE_ID + 1), str(-MAX_JS_SAFE_ID - 1)],
        "ok": True,
    }


def test_ids_as_strings_covers_generic_object_ids() -> None:
    """A GenericForeignKey's object_id holds IDs too; one type for the field, whatever it names."""
    from tests.django_project.testapp.models import Comment

    author = Author.objects.create(pk=BIG, name="a")
    comment = Comment.objects.create(target=author, text="c")
    [data] = dump(comment, ids_as_strings=True)
    assert data["fields"]["object_id"] == str(BIG)  # type: ignore[index]
    [plain] = dump(comment)
    assert plain["fields"]["object_id"] == BIG  # type: ignore[index]
    with override_settings(SERIALIZATION_MODULES=MODULES):
        text = serializers.serialize("json", [comment], ids_as_strings=True)
        [loaded] = serializers.deserialize("json", text)
    assert loaded.object.object_id == BIG
