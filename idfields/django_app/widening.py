"""What Django believes of integer columns that hold idfields IDs without being ID fields.

A generic ``object_id`` declared ``PositiveIntegerField`` (of a GenericForeignKey, as in
django-taggit and django-comments, or reached only through a GenericRelation, as in
django-reversion's test app) and the integer column behind a multi-column
``ForeignObject`` hold our 63-bit IDs once the column is bigint (``WidenObjectId``,
``ConvertToKSortedId``), but Django still takes the field at its declared word: its range
validators refuse the IDs, and every lookup with a value above 2**31 answers "no rows" without
asking the database (``IntegerFieldOverflow``). When the app is ready each such field reports
the range of the bigint type of the same family (``PositiveIntegerField`` ->
``PositiveBigIntegerField``) in its validators (model and form validation) and lookups, and
that type's column where Django creates the table from the model (apps without migrations).
Its class, ``get_internal_type`` and ``deconstruct`` stay as declared, so no app gets a
migration for it, serializers write what they did, and nobody forks a third-party app; the
column itself is widened by a migration of yours (``WidenObjectId``), and the checks of
:mod:`idfields.django_app.unwidened` say so until it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.apps import apps
from django.core.exceptions import EmptyResultSet, FieldDoesNotExist
from django.core.validators import BaseValidator, MaxValueValidator, MinValueValidator
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, IntegerField, Model
from django.db.models.lookups import IntegerFieldOverflow

from idfields.django_app.fields import KSortedFieldMixin, id_columns

# Implementation: nothing here is API (Django reaches this module through the app).
__all__: list[str] = []

# Django's name of each narrow integer type -> the bigint type of the same family.
WIDER = {
    "IntegerField": "BigIntegerField",
    "SmallIntegerField": "BigIntegerField",
    "PositiveIntegerField": "PositiveBigIntegerField",
    "PositiveSmallIntegerField": "PositiveBigIntegerField",
}


class _WideRange:
    """Mixed in before one of Django's integer lookups: the range check is the wide type's."""

    lhs: Any
    rhs: Any

    def process_rhs(self, compiler: Any, connection: BaseDatabaseWrapper) -> Any:
        if isinstance(self.rhs, int):
            wide = WIDER[self.lhs.output_field.get_internal_type()]
            low, high = connection.ops.integer_field_range(wide)
            if (low is not None and self.rhs < low) or (high is not None and self.rhs > high):
                raise EmptyResultSet
        return super(IntegerFieldOverflow, self).process_rhs(compiler, connection)  # type: ignore[misc]


# Django's IntegerField lookups that answer "no rows" for values outside the declared range.
_WIDE_LOOKUPS = [
    type(lookup.__name__, (_WideRange, lookup), {})
    for lookup in IntegerField.get_class_lookups().values()
    if issubclass(lookup, IntegerFieldOverflow)
]


class _WideColumn:
    """The column-facing methods a widened field takes as instance attributes: the wide type's
    column (tables made without migrations) and its parameter binding (psycopg binds a
    ``PositiveIntegerField``'s values as int4)."""

    def __init__(self, field: Field[Any, Any], internal_type: str) -> None:
        self.field = field
        self.internal_type = internal_type

    def db_type(self, connection: BaseDatabaseWrapper) -> str | None:
        data_type = connection.data_types.get(self.internal_type)
        if data_type is None:
            return None
        return str(data_type % self.field.db_type_parameters(connection))

    def get_db_prep_value(
        self, value: Any, connection: BaseDatabaseWrapper, prepared: bool = False
    ) -> Any:
        if not prepared:
            value = self.field.get_prep_value(value)
        return connection.ops.adapt_integerfield_value(value, self.internal_type)


def is_widened(field: object) -> bool:
    """Whether :func:`widen` gave ``field`` the bigint range."""
    method = vars(field).get("db_type") if isinstance(field, Field) else None
    return isinstance(getattr(method, "__self__", None), _WideColumn)


def widen(field: Field[Any, Any]) -> bool:
    """Give ``field`` the range, lookups, binding and column type of the bigint type of its
    family; False if it is not a narrow integer field.

    Its class and ``get_internal_type`` stay as declared: serializers (the XML ``type``
    attribute), migrations and introspection see the field the app defined.
    """
    wide = WIDER.get(field.get_internal_type())
    if wide is None or is_widened(field):
        return wide is not None
    low, high = connection.ops.integer_field_range(wide)
    range_validators: list[BaseValidator] = [MinValueValidator(low)] if low is not None else []
    if high is not None:
        range_validators.append(MaxValueValidator(high))
    vars(field)["validators"] = [*field.default_validators, *field._validators, *range_validators]  # type: ignore[attr-defined]
    column = _WideColumn(field, wide)
    vars(field)["db_type"] = column.db_type
    vars(field)["get_db_prep_value"] = column.get_db_prep_value
    for lookup in _WIDE_LOOKUPS:
        field.register_lookup(lookup)
    return True


def generic_object_ids(models: Iterable[type[Model]]) -> Iterator[Field[Any, Any]]:
    """The ``object_id`` field of each GenericForeignKey of ``models``, and of each
    GenericRelation to one of ``models`` (a model may hold the column with no GenericForeignKey
    of its own, as django-reversion's test models do), once per field. A name that resolves to
    no field is skipped: Django's ``contenttypes.E001`` reports it."""
    if not apps.is_installed("django.contrib.contenttypes"):
        return
    from django.contrib.contenttypes.fields import GenericForeignKey, GenericRelation

    wanted = list(models)
    found: list[Field[Any, Any] | None] = []
    for model in wanted:
        for private in model._meta.private_fields:
            if isinstance(private, GenericForeignKey):
                found.append(_field(model, private.fk_field))
    # A relation may be declared in any app; those of ``models`` cover isolated registries.
    for model in dict.fromkeys([*wanted, *apps.get_models(include_auto_created=True)]):
        for private in model._meta.private_fields:
            if isinstance(private, GenericRelation) and private.related_model in wanted:
                found.append(_field(private.related_model, private.object_id_field_name))
    yield from dict.fromkeys(field for field in found if field is not None)


def _field(model: type[Model], name: str) -> Field[Any, Any] | None:
    try:
        field = model._meta.get_field(name)
    except FieldDoesNotExist:
        return None
    return field if isinstance(field, Field) and field.column is not None else None


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
