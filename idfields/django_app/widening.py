"""What Django believes of integer columns that hold idfields IDs without being ID fields.

A GenericForeignKey's ``object_id`` declared ``PositiveIntegerField`` (django-taggit,
django-comments, contrib apps of many projects) and the integer column behind a multi-column
``ForeignObject`` hold our 63-bit IDs once the column is bigint (``WidenObjectId``,
``ConvertToKSortedId``), but Django still takes the field at its declared word: its range
validators refuse the IDs, and every lookup with a value above 2**31 answers "no rows" without
asking the database (``IntegerFieldOverflow``). When the app is ready each such field reports
the bigint type of the same family (``PositiveIntegerField`` -> ``PositiveBigIntegerField``):
range checks, lookups, forms and ``db_type`` (tables created without migrations) follow.
What migrations see does not change (``deconstruct`` reports the declared class), so no app
gets a migration for it and nobody forks a third-party app; the column itself is widened by a
migration of yours (``WidenObjectId``), and ``idfields.E020`` / ``E021`` say so until it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.apps import apps
from django.db.models import Field, Model

from idfields.django_app.fields import KSortedFieldMixin, id_columns

# Django's name of each narrow integer type -> the bigint type of the same family.
WIDER = {
    "IntegerField": "BigIntegerField",
    "SmallIntegerField": "BigIntegerField",
    "PositiveIntegerField": "PositiveBigIntegerField",
    "PositiveSmallIntegerField": "PositiveBigIntegerField",
}


def declared_type(field: Field[Any, Any]) -> str:
    """The internal type the field's class declares, whatever :func:`widen` made it report."""
    return str(type(field).get_internal_type(field))


class _Reports:
    """An instance's ``get_internal_type``: returns the wide type's name."""

    def __init__(self, internal_type: str) -> None:
        self.internal_type = internal_type

    def __call__(self) -> str:
        return self.internal_type


def widen(field: Field[Any, Any]) -> bool:
    """Make ``field`` report the bigint type of its family; False if it is not a narrow one."""
    wide = WIDER.get(declared_type(field))
    if wide is None:
        return False
    vars(field)["get_internal_type"] = _Reports(wide)
    vars(field).pop("validators", None)  # cached with the declared range
    return True


def generic_object_ids(models: Iterable[type[Model]]) -> Iterator[Field[Any, Any]]:
    """The ``object_id`` field of each GenericForeignKey of ``models``, once per field."""
    if not apps.is_installed("django.contrib.contenttypes"):
        return
    from django.contrib.contenttypes.fields import GenericForeignKey

    seen: set[Field[Any, Any]] = set()
    for model in models:
        for private in model._meta.private_fields:
            if isinstance(private, GenericForeignKey):
                field = model._meta.get_field(private.fk_field)
                if isinstance(field, Field) and field not in seen:
                    seen.add(field)
                    yield field


def id_holding_columns(models: Iterable[type[Model]]) -> Iterator[Field[Any, Any]]:
    """Integer fields of ``models`` that hold idfields IDs without being ID fields or foreign
    keys: GenericForeignKey object_ids (while any model has an idfields key: a row may point at
    it) and the local columns of multi-column ForeignObjects to an ID field."""
    models = list(models)
    everything = apps.get_models(include_auto_created=True)
    if any(isinstance(model._meta.pk, KSortedFieldMixin) for model in everything):
        yield from generic_object_ids(models)
    for model in models:
        for column, relation in id_columns(model).items():
            if column is not relation:  # a ForeignKey is bigint by its target already
                yield column


def widen_id_holding_columns() -> list[Field[Any, Any]]:
    """Widen every such field of the installed models (run when the app is ready)."""
    models = apps.get_models(include_auto_created=True)
    return [field for field in id_holding_columns(models) if widen(field)]
