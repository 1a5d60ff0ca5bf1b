"""The admin change page round-trips 63-bit IDs (pk in the URL, ID columns, FKs, M2M) and
shows the creation time decoded from an ID."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib import admin
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, RequestFactory

from idfields.django_app.admin import IdAdminMixin, created_from_id, creation_time
from idfields.layouts import MAX_ID, get_layout
from tests.django_project.testapp.models import Author, Book, Restaurant, Row, Tag

pytestmark = pytest.mark.django_db


def test_change_view_round_trips_ids(admin_client: Client) -> None:
    big = MAX_ID - 3
    author = Author.objects.create(pk=big, name="a")  # an FK target beyond a float's precision
    other = Author.objects.create(name="b")
    tag = Tag.objects.create(label="t")
    book = Book.objects.create(author=author, title="t", public_id=big - 1)
    book.tags.add(tag)
    url = f"/admin/testapp/book/{book.pk}/change/"

    page = admin_client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert f'value="{big - 1}"' in html and f'<option value="{big}" selected>' in html

    data = {"author": str(big), "tags": [str(tag.pk)], "title": "t2", "public_id": str(big - 1)}
    answer = admin_client.post(url, {**data, "trace": ""})
    assert answer.status_code == 302, answer.content.decode()[:2000]
    book.refresh_from_db()
    assert (book.author_id, book.public_id, book.title) == (big, big - 1, "t2")
    assert list(book.tags.values_list("pk", flat=True)) == [tag.pk]

    admin_client.post(url, {**data, "author": str(other.pk), "trace": ""})
    book.refresh_from_db()
    assert (book.author_id, book.public_id) == (other.pk, big - 1)


def test_add_view_fills_a_blank_id_column(admin_client: Client) -> None:
    author = Author.objects.create(name="a")
    answer = admin_client.post(
        "/admin/testapp/book/add/",
        {"author": str(author.pk), "title": "new", "public_id": "", "trace": ""},
    )
    assert answer.status_code == 302, answer.content.decode()[:2000]
    book = Book.objects.get(title="new")
    assert get_layout("snowflake").decode(book.public_id).in_layout
    assert answer["Location"].endswith("/admin/testapp/book/")
    assert admin_client.get(f"/admin/testapp/book/{book.pk}/change/").status_code == 200


def test_created_time_is_decoded_from_the_id(admin_client: Client) -> None:
    author = Author.objects.create(name="a")
    book = Book.objects.create(author=author, title="t")
    created = creation_time(book)
    assert created is not None and abs((datetime.now(UTC) - created).total_seconds()) < 60
    assert created_from_id("public_id")(book) == get_layout("snowflake").decode(book.public_id).time
    assert creation_time(book, "author") == creation_time(author)  # through the foreign key
    place = Restaurant.objects.create(name="r")
    assert creation_time(place) is not None  # the MTI parent link leads to the parent's pk
    assert creation_time(Book(author=author)) is None  # unsaved: no ID yet
    with pytest.raises(ImproperlyConfigured, match="not an idfields ID field"):
        creation_time(book, "title")
    assert creation_time(Row.objects.create(value=1)) is not None

    listing = admin_client.get("/admin/testapp/book/").content.decode()
    assert "column-created_from_public_id" in listing
    change = admin_client.get(f"/admin/testapp/book/{book.pk}/change/").content.decode()
    assert "Created (from the ID)" in change and str(created.year) in change


def test_raw_id_boxes_fit_a_whole_id(rf: RequestFactory, admin_user: Any) -> None:
    class RawBookAdmin(IdAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
        raw_id_fields = ("author", "tags")

    request = rf.get("/")
    request.user = admin_user
    form = RawBookAdmin(Book, admin.site).get_form(request)()
    # vUUIDField: the admin's own 20em rule (forms.css), room for 19 digits; the default is 5em
    assert 'class="vForeignKeyRawIdAdminField vUUIDField"' in str(form["author"])
