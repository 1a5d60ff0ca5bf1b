"""Public IDs in the Django project: only public strings in URLs and JSON, rows found by them, and
typos, tampering and other keys' strings answered with 404 (URLs) or 400 (API input), on each
backend. The views and the API live in ``testapp/views.py``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core import checks
from django.db.models import Model
from django.test import Client, override_settings
from django.urls import reverse
from rest_framework import serializers

from idfields import IdFieldsError
from idfields.codecs import PermutationError, PermutationKeyError, PublicIds, _checked
from idfields.django_app.forms import PublicIdFormField
from idfields.django_app.public import check_permutation_key, public_ids_for
from idfields.django_app.rest import PublicIdField, PublicIdRelatedField
from tests.django_project.conftest import ALIASES
from tests.django_project.testapp.models import Author, Book, Tag

pytestmark = pytest.mark.django_db(databases=ALIASES)

KEY = "3a7f0c9e5d2b8146a0f9e8d7c6b5a4938271605f4e3d2c1b0a99887766554433"  # settings.py's
NEW_KEY = "c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80910a1b"
OTHER_KEY = "7e6d5c4b3a291807f6e5d4c3b2a19087e6d5c4b3a291807f6e5d4c3b2a190807"


def typo(text: str, position: int = 7) -> str:
    replacement = _checked.ALPHABET[(_checked.ALPHABET.index(text[position]) + 1) % 31]
    return text[:position] + replacement + text[position + 1 :]


def swapped(text: str) -> str:
    for i in range(3, len(text) - 1):
        if text[i] != text[i + 1]:
            return text[:i] + text[i + 1] + text[i] + text[i + 2 :]
    raise AssertionError("no neighbours differ")


def wrong_key(obj: Model, key: str = OTHER_KEY) -> str:
    """``obj``'s public ID as a site with another key would make it."""
    return PublicIds(key, label=type(obj)._meta.label_lower).encode(int(obj.pk))


def bad_strings(obj: Model) -> dict[str, str]:
    text = obj.public_id  # type: ignore[attr-defined]
    return {
        "typo": typo(text),
        "swap": swapped(text),
        "upper": text.upper(),
        "padded": "0" + text,
        "digits": str(obj.pk),
        "wrong key": wrong_key(obj),
    }


def test_objects_show_a_public_id_and_are_found_by_it(alias: str) -> None:
    author = Author.objects.using(alias).create(name="a")
    text = author.public_id
    assert len(text) == 15 and set(text) <= set(_checked.ALPHABET)
    assert str(author.pk) not in text
    assert Author.objects.using(alias).get(pk__public=text) == author
    assert Author.public_id.decode(text) == author.pk
    for name, bad in bad_strings(author).items():
        assert not Author.objects.using(alias).filter(pk__public=bad).exists(), name


def test_each_model_has_its_own_strings(alias: str) -> None:
    """The label (``app.model``, or ``PublicId(label=...)``) is mixed into the key: one table's
    public ID finds nothing in another, even for the same number."""
    tag = Tag.objects.using(alias).create(label="t")
    author = Author.objects.using(alias).create(pk=tag.pk, name="same number")
    assert tag.public_id != author.public_id
    assert public_ids_for(Tag).label == "shop.tag"
    assert not Author.objects.using(alias).filter(pk__public=tag.public_id).exists()


def test_the_view_is_reached_by_public_id_only(alias: str, client: Client) -> None:
    author = Author.objects.using(alias).create(name="v")
    url = reverse("author", args=[author])
    assert url == f"/authors/{author.public_id}/" == reverse("author", args=[author.pk])
    answer = client.get(url, headers={"X-Test-Db": alias})
    assert answer.status_code == 200
    assert answer.json() == {"id": author.public_id, "name": "v"}
    assert str(author.pk) not in answer.content.decode()
    for name, bad in bad_strings(author).items():
        for view in ("authors", "by-text/authors"):
            answer = client.get(f"/{view}/{bad}/", headers={"X-Test-Db": alias})
            assert answer.status_code == 404, (name, view)


def test_the_api_speaks_public_ids_only(alias: str, client: Client) -> None:
    author = Author.objects.using(alias).create(name="api")
    headers = {"X-Test-Db": alias}
    listed = client.get("/api/authors/", headers=headers).json()
    assert {"id": author.public_id, "name": "api"} in listed
    assert str(author.pk) not in json.dumps(listed)

    one = client.get(f"/api/authors/{author.public_id}/", headers=headers)
    assert one.status_code == 200 and one.json()["id"] == author.public_id
    for name, bad in bad_strings(author).items():
        assert client.get(f"/api/authors/{bad}/", headers=headers).status_code == 404, name

    made = post(client, alias, {"author": author.public_id, "title": "t"})
    assert made.status_code == 201, made.content
    book = Book.objects.using(alias).get(pk__public=made.json()["id"])
    assert Book.objects.using(alias).get(author__pk__public=author.public_id) == book
    assert (book.author_id, made.json()["author"]) == (author.pk, author.public_id)
    assert str(author.pk) not in made.content.decode()
    for name, bad in bad_strings(author).items():
        refused = post(client, alias, {"author": bad, "title": "t"})
        assert refused.status_code == 400, name
        assert "author" in refused.json(), name


def post(client: Client, alias: str, data: dict[str, Any]) -> Any:
    return client.post(
        "/api/books/",
        json.dumps(data),
        content_type="application/json",
        headers={"X-Test-Db": alias},
    )


def test_the_api_names_the_problem(client: Client) -> None:
    author = Author.objects.create(name="why")
    reasons = {
        name: post(client, "default", {"author": bad, "title": "t"}).json()["author"][0]
        for name, bad in bad_strings(author).items()
    }
    assert "check character" in reasons["typo"] and "check character" in reasons["swap"]
    assert "lowercase" in reasons["upper"]
    assert "16 characters long" in reasons["padded"]
    assert "key this application does not hold" in reasons["wrong key"] or (
        "future" in reasons["wrong key"] or "possible" in reasons["wrong key"]
    )


def test_rotation_keeps_old_links_working(alias: str, client: Client) -> None:
    author = Author.objects.using(alias).create(name="r")
    old = author.public_id
    with override_settings(
        IDFIELDS={"NODE_SOURCE": "development", "PERMUTATION_KEY": [NEW_KEY, KEY]}
    ):
        new = Author.objects.using(alias).get(pk=author.pk).public_id
        assert new != old and new == wrong_key(author, NEW_KEY)
        for text in (old, new):
            answer = client.get(f"/api/authors/{text}/", headers={"X-Test-Db": alias})
            assert answer.status_code == 200 and answer.json()["id"] == new
    with override_settings(IDFIELDS={"NODE_SOURCE": "development", "PERMUTATION_KEY": NEW_KEY}):
        assert client.get(f"/authors/{old}/", headers={"X-Test-Db": alias}).status_code == 404


def test_the_form_field_cleans_to_the_pk() -> None:
    author = Author.objects.create(name="f")
    field = PublicIdFormField(Author)
    assert field.clean(author.public_id) == author.pk
    assert field.prepare_value(author.pk) == field.prepare_value(author) == author.public_id
    for name, bad in bad_strings(author).items():
        with pytest.raises(Exception, match="public ID") as caught:
            field.clean(bad)
        assert type(caught.value).__name__ == "ValidationError", name


def test_the_admin_shows_both_forms_and_finds_by_public_id(admin_client: Client) -> None:
    author = Author.objects.create(name="admin-shown")
    page = admin_client.get(f"/admin/testapp/author/{author.pk}/change/").content.decode()
    assert author.public_id in page
    listing = admin_client.get("/admin/testapp/author/").content.decode()
    assert author.public_id in listing and str(author.pk) in listing
    found = admin_client.get("/admin/testapp/author/", {"q": author.public_id}).content.decode()
    assert "admin-shown" in found


# --- the key setting ------------------------------------------------------------------------------


def key_messages(key: Any) -> list[checks.CheckMessage]:
    with override_settings(IDFIELDS={"NODE_SOURCE": "development", "PERMUTATION_KEY": key}):
        return check_permutation_key(None)


@pytest.mark.parametrize(
    "key",
    ["abc", "password12345678", "correct horse battery staple 0123456789", KEY[:40], [KEY, "abc"]],
)
def test_a_weak_key_fails_the_check(key: Any) -> None:
    messages = key_messages(key)
    assert [m.id for m in messages] == ["idfields.E009"]
    assert "abc" not in messages[0].msg and "password" not in messages[0].msg
    assert KEY[:20] not in messages[0].msg


def test_the_key_setting_is_the_one_used() -> None:
    author = Author.objects.create(name="k")
    with override_settings(IDFIELDS={"NODE_SOURCE": "development", "PERMUTATION_KEY": OTHER_KEY}):
        assert Author.objects.get(pk=author.pk).public_id == wrong_key(author)


def test_models_with_public_ids_need_a_key() -> None:
    messages = key_messages(None)
    assert [m.id for m in messages] == ["idfields.E010"]
    assert "testapp.Author" in messages[0].msg


@pytest.mark.parametrize("key", [12345678901234567890, {"k": "v-secret"}, b"\x00" * 40])
def test_the_key_is_never_printed(key: Any) -> None:
    with override_settings(IDFIELDS={"NODE_SOURCE": "development", "PERMUTATION_KEY": key}):
        messages = checks.run_checks(tags=[checks.Tags.compatibility, checks.Tags.security])
    shown = " ".join(f"{m.msg} {m.hint}" for m in messages)
    assert "12345678901234567890" not in shown and "v-secret" not in shown
    assert any(m.id in {"idfields.E008", "idfields.E009"} for m in messages)


def test_the_first_id_error_does_not_print_a_wrong_typed_key() -> None:
    with (
        override_settings(
            IDFIELDS={"NODE_SOURCE": "development", "PERMUTATION_KEY": 12345678901234567890}
        ),
        pytest.raises(Exception, match="invalid settings") as caught,
    ):
        Author.objects.create(name="never")
    assert "12345678901234567890" not in str(caught.value)
    assert "PERMUTATION_KEY'] = <hidden> (int)" in str(caught.value)


@pytest.mark.parametrize(
    "key", [KEY[:40], f"{NEW_KEY},{KEY}"], ids=["truncated", "comma-joined rotation"]
)
def test_a_wrong_key_at_run_time_is_an_error_not_a_404(client: Client, key: str) -> None:
    author = Author.objects.create(name="loud")
    text = author.public_id
    with override_settings(IDFIELDS={"NODE_SOURCE": "development", "PERMUTATION_KEY": key}):
        for url in (f"/api/authors/{text}/", f"/authors/{text}/", f"/by-text/authors/{text}/"):
            with pytest.raises(PermutationKeyError):
                client.get(url)
    assert client.get(f"/api/authors/{typo(text)}/").status_code == 404


def test_key_errors_are_not_read_as_not_found() -> None:
    for error in (PermutationKeyError, PermutationError):
        assert issubclass(error, IdFieldsError)
        assert not issubclass(error, ValueError | TypeError | LookupError)


class BookReadSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    """Related fields without a queryset: the model comes from ``Meta.model``."""

    id = PublicIdField(source="pk", read_only=True)
    author = PublicIdRelatedField(read_only=True)
    tags = PublicIdRelatedField(read_only=True, many=True)

    class Meta:
        model = Book
        fields = ["id", "author", "tags", "title"]


def test_read_only_related_fields_show_public_ids() -> None:
    author = Author.objects.create(name="ro")
    book = Book.objects.create(author=author, title="ro")
    tag = Tag.objects.create(label="ro-tag")
    book.tags.add(tag)
    data = BookReadSerializer(Book.objects.get(pk=book.pk)).data
    assert data == {
        "id": book_public_id(book),
        "author": author.public_id,
        "tags": [tag.public_id],
        "title": "ro",
    }


def book_public_id(book: Book) -> str:
    return public_ids_for(Book).encode(book.pk)
