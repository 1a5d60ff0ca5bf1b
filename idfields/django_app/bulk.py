"""``bulk_create`` with conflict handling, on models whose pk idfields makes in Python.

Every instance has its ID before the INSERT, so after ``ignore_conflicts=True`` or
``update_conflicts=True`` a skipped (or updated) row's instance would keep an ID that no row
has: a later save() would add a duplicate, a relation set to it would point at nothing. The
only hook after the INSERT is ``QuerySet.bulk_create`` itself, so ``install()`` wraps it; for
such a model it answers as ``BigAutoField`` does:

- ``ignore_conflicts``: Django documents that the pk is not set (the database cannot say which
  rows went in), so every instance we numbered gets ``pk = None`` back; no query is added.
- ``update_conflicts``: BigAutoField reads each row's pk back (RETURNING, PostgreSQL); here one
  SELECT per 500 instances asks which of our IDs are rows, and an instance whose ID is not takes
  the pk of the row it updated, matched on its ``unique_fields`` (MariaDB/MySQL take none: on
  each unique key of the model, in turn; MariaDB's RETURNING gives BigAutoField that row's pk).

Other models and calls go straight to Django's method.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db.models import Field, Model, Q, QuerySet

from idfields.django_app.fields import APP, KSortedFieldMixin

# Implementation: nothing here is API (Django reaches this module through the app).
__all__: list[str] = []

_WRAPPED = "_idfields_settles_conflicts"
_CHUNK = 500  # IDs per SELECT: within every backend's bound-parameter limit


def install() -> None:
    """Wrap ``QuerySet.bulk_create`` (idempotent; ``abulk_create`` calls it too)."""
    # No documented hook follows bulk_create's INSERT for every model; a test pins the signature.
    if getattr(QuerySet.bulk_create, _WRAPPED, False):
        return
    QuerySet.bulk_create = _settling(QuerySet.bulk_create)  # type: ignore[method-assign,assignment]


def _settling(bulk_create: Callable[..., list[Model]]) -> Callable[..., list[Model]]:
    @functools.wraps(bulk_create)
    def wrapper(
        self: QuerySet[Any],
        objs: Iterable[Model],
        batch_size: int | None = None,
        ignore_conflicts: bool = False,
        update_conflicts: bool = False,
        update_fields: Sequence[str] | None = None,
        unique_fields: Sequence[str] | None = None,
    ) -> list[Model]:
        pk = self.model._meta.pk
        ours = isinstance(pk, KSortedFieldMixin) and pk.generation == APP
        if not (ours and (ignore_conflicts or update_conflicts)):
            return bulk_create(
                self, objs, batch_size, ignore_conflicts, update_conflicts, update_fields,
                unique_fields,
            )  # fmt: skip
        objs = list(objs)
        fresh = [obj for obj in objs if obj.pk is None]  # the ones we give an ID
        created = bulk_create(
            self, objs, batch_size, ignore_conflicts, update_conflicts, update_fields,
            unique_fields,
        )  # fmt: skip
        if ignore_conflicts:
            for obj in fresh:
                obj.pk = None
        elif fresh:
            settle(self, fresh, list(unique_fields or ()))
        return created

    setattr(wrapper, _WRAPPED, True)
    return wrapper


def settle(queryset: QuerySet[Any], fresh: list[Model], unique_fields: list[str]) -> None:
    """Give each instance whose new ID no row has the pk of the row it met, or None."""
    manager = queryset.model._base_manager.db_manager(queryset.db)
    ids = [obj.pk for obj in fresh]
    rows: set[Any] = set()
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        rows.update(manager.filter(pk__in=chunk).values_list("pk", flat=True))
    missed = [obj for obj in fresh if obj.pk not in rows]
    for obj in missed:
        obj.pk = None
    # Without unique_fields (MariaDB/MySQL take none), the row met may be on any unique key.
    for names in [unique_fields] if unique_fields else unique_sets(queryset.model):
        missed = [obj for obj in missed if obj.pk is None]
        if missed:
            _adopt(manager, missed, names)


def unique_sets(model: type[Model]) -> list[list[str]]:
    """The field names of each of the model's unique keys but its pk, as declared."""
    opts = model._meta
    return [
        *(
            [field.name]
            for field in opts.local_concrete_fields
            if field.unique and not field.primary_key
        ),
        *(list(names) for names in opts.unique_together),
        *(list(constraint.fields) for constraint in opts.total_unique_constraints),
    ]


def _adopt(manager: Any, missed: list[Model], unique_fields: list[str]) -> None:
    """The pk of the row each instance updated, matched on the ``unique_fields`` values."""
    opts = missed[0]._meta
    fields: list[Field[Any, Any]] = [
        opts.get_field(opts.pk.name if name == "pk" else name)  # type: ignore[misc]
        for name in unique_fields
    ]
    names = [field.attname for field in fields]

    def key(obj: Model) -> tuple[Any, ...]:
        return tuple(getattr(obj, name) for name in names)

    for start in range(0, len(missed), _CHUNK):
        chunk = missed[start : start + _CHUNK]
        match = functools.reduce(
            operator.or_, (Q(**dict(zip(names, key(obj), strict=True))) for obj in chunk)
        )
        found = {tuple(row[1:]): row[0] for row in manager.filter(match).values_list("pk", *names)}
        for obj in chunk:
            obj.pk = found.get(key(obj))
