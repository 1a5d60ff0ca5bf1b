"""Django REST framework with public IDs beyond plain fields: hyperlinks through a router and view
sets, cursor pagination whose cursors hold public IDs, and integer keys as JSON strings under
``IDFIELDS["IDS_AS_STRINGS"]``. The views live in ``testapp/views.py``."""

from __future__ import annotations

import base64
import json
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, override_settings
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from idfields.django_app.public import public_ids_for
from idfields.django_app.rest import IdFieldsSerializerMixin, PublicIdCursorPagination
from tests.django_project.conftest import ALIASES
from tests.django_project.testapp.models import Author, Book, Tag

pytestmark = pytest.mark.django_db(databases=ALIASES)

SETTINGS = {
    "NODE_SOURCE": "development",
    "PERMUTATION_KEY": "3a7f0c9e5d2b8146a0f9e8d7c6b5a4938271605f4e3d2c1b0a99887766554433",
}


def test_hyperlinks_carry_public_ids_through_a_router(client: Client) -> None:
    author = Author.objects.create(name="linked")
    listed = client.get("/api/linked/authors/").json()
    url = f"http://testserver/api/linked/authors/{author.public_id}/"
    assert {"url": url, "name": "linked", "books": []} in listed
    assert str(author.pk) not in json.dumps(listed)

    made = client.post(
        "/api/linked/books/",
        json.dumps({"author": url, "title": "t"}),
        content_type="application/json",
    )
    assert made.status_code == 201, made.content
    book = Book.objects.get(author=author)
    book_url = f"http://testserver/api/linked/books/{public_ids_for(Book).encode(book.pk)}/"
    assert made.json() == {"url": book_url, "author": url, "title": "t"}
    assert client.get(url).json()["books"] == [book_url]
    assert client.get(book_url).json()["title"] == "t"


def test_a_bad_hyperlink_is_a_400_naming_the_problem(client: Client) -> None:
    author = Author.objects.create(name="bad link")
    text = author.public_id
    typo = text[:7] + ("x" if text[7] != "x" else "y") + text[8:]
    for bad, says in [(typo, "check character"), (text[:-1], "characters long")]:
        refused = client.post(
            "/api/linked/books/",
            json.dumps({"author": f"http://testserver/api/linked/authors/{bad}/", "title": "t"}),
            content_type="application/json",
        )
        assert refused.status_code == 400
        assert says in refused.json()["author"][0], refused.json()


def cursor_of(link: str) -> str:
    cursor = parse_qs(urlsplit(link).query)["cursor"][0]
    return base64.b64decode(cursor.encode()).decode()


def test_cursor_pages_hold_public_ids_not_keys(client: Client) -> None:
    authors = [Author.objects.create(name=f"page {n}") for n in range(5)]
    seen: list[str] = []
    link: str | None = "/api/author-pages/"
    while link is not None:
        page = client.get(link).json()
        seen += [row["id"] for row in page["results"]]
        link = page["next"]
        if link is not None:
            position = parse_qs(cursor_of(link))["p"][0]
            assert position == seen[-1]  # the public ID of the last row shown
            assert all(str(author.pk) not in cursor_of(link) for author in authors)
    newest_first = sorted(authors, key=lambda author: author.pk, reverse=True)
    assert seen[: len(authors)] == [author.public_id for author in newest_first]


def test_a_tampered_cursor_is_a_404(client: Client) -> None:
    author = Author.objects.create(name="cursor")
    for position in (str(author.pk), author.public_id.upper()):
        cursor = base64.b64encode(f"p={position}".encode()).decode()
        assert client.get("/api/author-pages/", {"cursor": cursor}).status_code == 404
    assert client.get(f"/api/author-pages/{author.public_id}/").json()["name"] == "cursor"
    assert client.get(f"/api/author-pages/{author.pk}/").status_code == 404


def test_cursor_pages_order_by_the_pk_only() -> None:
    class ByName(PublicIdCursorPagination):
        ordering = "name"

    request = Request(APIRequestFactory().get("/"))
    with pytest.raises(ImproperlyConfigured, match=r"primary key, not 'name'.*ordering = \"-pk\""):
        ByName().paginate_queryset(Author.objects.all(), request)


class BookNumbers(IdFieldsSerializerMixin, serializers.ModelSerializer):  # type: ignore[type-arg]
    class Meta:
        model = Book
        fields = ["id", "author", "tags", "public_id", "title"]


def book_with_tag() -> Book:
    book = Book.objects.create(author=Author.objects.create(name="n"), title="n")
    book.tags.add(Tag.objects.create(label="n"))
    return Book.objects.get(pk=book.pk)


@pytest.mark.parametrize("as_strings", [True, False])
def test_ids_as_strings_reaches_model_serializers(as_strings: bool) -> None:
    book = book_with_tag()

    def shown(value: int) -> int | str:
        return str(value) if as_strings else value

    with override_settings(IDFIELDS={**SETTINGS, "IDS_AS_STRINGS": as_strings}):
        assert BookNumbers(book).data == {
            "id": shown(book.pk),
            "author": shown(book.author_id),
            "tags": [shown(book.tags.get().pk)],
            "public_id": shown(book.public_id),
            "title": "n",
        }


def test_ids_as_strings_are_taken_back_as_input() -> None:
    author = Author.objects.create(name="in")
    with override_settings(IDFIELDS={**SETTINGS, "IDS_AS_STRINGS": True}):
        given = BookNumbers(data={"author": str(author.pk), "title": "in", "tags": []})
        assert given.is_valid(), given.errors
        assert given.save().author == author
