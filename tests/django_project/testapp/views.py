"""Views that expose only public IDs: a plain Django view and a DRF API."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from rest_framework import serializers, viewsets

from idfields.django_app.rest import (
    PublicIdCursorPagination,
    PublicIdField,
    PublicIdHyperlinkedModelSerializer,
    PublicIdLookupMixin,
    PublicIdRelatedField,
)
from tests.django_project.testapp.models import Author, Book


def author_detail(request: HttpRequest, pk: int) -> JsonResponse:
    """``<author:pk>``: the converter has decoded the public ID already."""
    author = get_object_or_404(Author, pk=pk)
    return JsonResponse({"id": author.public_id, "name": author.name})


def author_by_text(request: HttpRequest, text: str) -> JsonResponse:
    """Any string in the URL: the ``public`` lookup answers a bad one with no row (404)."""
    author = get_object_or_404(Author, pk__public=text)
    return JsonResponse({"id": author.public_id, "name": author.name})


class AuthorSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    id = PublicIdField(source="pk", read_only=True)

    class Meta:
        model = Author
        fields = ["id", "name"]


class BookSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    id = PublicIdField(source="pk", read_only=True)
    author = PublicIdRelatedField(queryset=Author.objects.all())

    class Meta:
        model = Book
        fields = ["id", "author", "title"]


class PublicLookup:
    lookup_field = "pk__public"
    lookup_url_kwarg = "public_id"
    lookup_value_regex = "[^/]+"  # anything: the lookup itself refuses what is not valid


class AuthorViewSet(PublicLookup, viewsets.ModelViewSet):  # type: ignore[type-arg]
    queryset = Author.objects.order_by("pk")
    serializer_class = AuthorSerializer


class BookViewSet(PublicLookup, viewsets.ModelViewSet):  # type: ignore[type-arg]
    queryset = Book.objects.order_by("pk")
    serializer_class = BookSerializer


def links(own: str, **related: str) -> dict[str, dict[str, str]]:
    """``extra_kwargs`` naming the detail views of the ``linked/`` routes."""
    views = {"url": own, **related}
    return {field: {"view_name": f"linked-{view}-detail"} for field, view in views.items()}


class LinkedAuthorSerializer(PublicIdHyperlinkedModelSerializer):
    class Meta:
        model = Author
        fields = ["url", "name", "books"]
        read_only_fields = ["books"]
        extra_kwargs = links("author", books="book")


class LinkedBookSerializer(PublicIdHyperlinkedModelSerializer):
    class Meta:
        model = Book
        fields = ["url", "author", "title"]
        extra_kwargs = links("book", author="author")


class LinkedAuthorViewSet(AuthorViewSet):
    serializer_class = LinkedAuthorSerializer


class LinkedBookViewSet(BookViewSet):
    serializer_class = LinkedBookSerializer


class Pages(PublicIdCursorPagination):
    page_size = 2


class AuthorPageViewSet(PublicIdLookupMixin, viewsets.ReadOnlyModelViewSet):  # type: ignore[type-arg]
    queryset = Author.objects.all()
    serializer_class = AuthorSerializer
    pagination_class = Pages
