"""Admin helpers: the creation time an ID carries, shown next to it.

A k-sorted ID starts with its timestamp, so the admin can show when a row was made without a
``created_at`` column; sorting by the ID sorts by that time::

    from idfields.django_app.admin import IdAdminMixin, created_from_id

    @admin.register(Book)
    class BookAdmin(IdAdminMixin, admin.ModelAdmin):
        list_display = ("title", created_from_id())             # the pk's time
        # created_from_id("public_id", description="published")  # another ID column

    @admin.register(Order)
    class OrderAdmin(PublicIdAdminMixin, admin.ModelAdmin):
        list_display = ("pk", public_id_column(), "total")   # both forms of the key
        search_fields = ("reference",)                       # a public ID finds its row too
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.contrib import admin
from django.contrib.admin.widgets import ForeignKeyRawIdWidget
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Field, ForeignKey, Model, QuerySet
from django.http import HttpRequest

from idfields.codecs import PublicIdError
from idfields.django_app.fields import KSortedFieldMixin, id_field_of
from idfields.django_app.public import public_ids_for

# A ``list_display`` column. django-stubs types a column's value ``str | bool``; the admin also
# formats a datetime (in the current time zone) and shows None as its empty value, which is what
# a creation time wants, so the value is Any here.
Column = Callable[[Model], Any]
ReadonlyFields = list[str] | tuple[str, ...]  # what ModelAdmin.get_readonly_fields returns

__all__ = [
    "IdAdminMixin",
    "PublicIdAdminMixin",
    "created_from_id",
    "creation_time",
    "public_id_column",
]


def id_field(model: type[Model], name: str = "pk") -> KSortedFieldMixin:
    """The ID field behind ``name`` (``"pk"``, a field, or a foreign key to an ID field)."""
    field: Any = model._meta.pk if name == "pk" else model._meta.get_field(name)
    found = id_field_of(field)  # FKs and MTI parent links carry their target's IDs
    if found is None:
        raise ImproperlyConfigured(
            f"{model._meta.label}.{name} is a {type(field).__name__}, not an idfields ID field; "
            "created_from_id() decodes only SnowflakeField, TraceIdField, DecimalIdField and "
            "their AutoField variants (or foreign keys to them)"
        )
    return found


def creation_time(obj: Model, name: str = "pk") -> datetime | None:
    """When the ID in ``obj.<name>`` was made (UTC), or None: unset, or a layout without time."""
    field = id_field(type(obj), name)
    value = getattr(obj, "pk" if name == "pk" else _attname(type(obj), name))
    if value is None:
        return None
    return field.layout.decode(int(value)).time


def _attname(model: type[Model], name: str) -> str:
    field = model._meta.get_field(name)
    return field.attname if isinstance(field, Field) else name


def created_from_id(name: str = "pk", *, description: str = "created") -> Column:
    """A ``list_display`` column with the creation time decoded from ID column ``name``.

    The column sorts by the ID itself, which is the same order as the creation time.
    """

    def created(obj: Model) -> datetime | None:
        return creation_time(obj, name)

    created.__name__ = f"created_from_{name}"
    return admin.display(description=description, ordering=name)(created)


class IdAdminMixin:
    """Adds the pk's decoded creation time, read-only, to the change page of a ModelAdmin, and
    widens ``raw_id_fields`` boxes of foreign keys to ID fields to show a whole ID."""

    def formfield_for_foreignkey(
        self, db_field: ForeignKey[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> Any:
        formfield = super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]
        widget = getattr(formfield, "widget", None)
        if isinstance(widget, ForeignKeyRawIdWidget) and id_field_of(db_field) is not None:
            # The admin's own class for wide keys (forms.css: 20em, as for a UUID), where the
            # raw-id box's 5em shows 8 of 19 digits; the admin's JavaScript keeps working.
            widget.attrs.setdefault("class", "vForeignKeyRawIdAdminField vUUIDField")
        return formfield

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> ReadonlyFields:
        fields = super().get_readonly_fields(request, obj)  # type: ignore[misc]
        return fields if obj is None else (*fields, "id_created")

    @admin.display(description="created (from the ID)")
    def id_created(self, obj: Model) -> datetime | None:
        return creation_time(obj)


def public_id_column(description: str = "public ID") -> Callable[[Model], str]:
    """A ``list_display`` column with each row's public ID (sorted like the pk)."""

    def public_id(obj: Model) -> str:
        return public_ids_for(type(obj)).encode(int(obj.pk))

    return admin.display(description=description, ordering="pk")(public_id)


class PublicIdAdminMixin:
    """The change page shows the public ID next to the pk; searching a public ID finds its row."""

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> ReadonlyFields:
        fields = super().get_readonly_fields(request, obj)  # type: ignore[misc]
        return fields if obj is None else (*fields, "public_id_shown")

    @admin.display(description="public ID")
    def public_id_shown(self, obj: Model) -> str:
        return public_ids_for(type(obj)).encode(int(obj.pk))

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        found, duplicates = super().get_search_results(  # type: ignore[misc]
            request, queryset, search_term
        )
        try:
            pk = public_ids_for(queryset.model).decode(search_term.strip())
        except PublicIdError:
            return found, duplicates
        return found | queryset.filter(pk=pk), duplicates
