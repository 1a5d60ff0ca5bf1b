"""Cursor pagination over the primary key whose cursors carry public IDs, never the key."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db.models import Model, QuerySet
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.views import APIView

from idfields.codecs import PublicIdError
from idfields.django_app.public import public_ids_for


class PublicIdCursorPagination(CursorPagination):
    """``CursorPagination`` ordered by the pk (newest first by default, ``ordering = "pk"`` for
    oldest first), whose ``next`` and ``previous`` links hold the row's public ID: DRF's own
    cursor is the base64 of the raw key. A cursor that does not decode is DRF's 404."""

    ordering = "-pk"
    model: type[Model]

    def paginate_queryset(
        self, queryset: QuerySet[Any], request: Request, view: APIView | None = None
    ) -> list[Any] | None:
        self.model = queryset.model
        first = self.get_ordering(request, queryset, view)[0].lstrip("-")
        if first not in {"pk", self.model._meta.pk.name}:
            raise ImproperlyConfigured(
                f"{type(self).__name__} orders by the primary key, not {first!r}: set "
                'ordering = "-pk" or "pk"'
            )
        return super().paginate_queryset(queryset, request, view)  # type: ignore[no-any-return]

    def encode_cursor(self, cursor: Cursor) -> str:
        if cursor.position is not None:
            position = public_ids_for(self.model).encode(int(cursor.position))
            cursor = cursor._replace(position=position)
        return super().encode_cursor(cursor)  # type: ignore[no-any-return]

    def decode_cursor(self, request: Request) -> Cursor | None:
        cursor = super().decode_cursor(request)
        if cursor is None or cursor.position is None:
            return cursor
        try:
            pk = public_ids_for(self.model).decode(cursor.position)
        except PublicIdError:
            raise NotFound(self.invalid_cursor_message) from None
        return cursor._replace(position=str(pk))
