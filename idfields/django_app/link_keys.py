"""Key columns at odds with who numbers their rows.

Django inserts a row of a model keyed by its own ``AutoField`` / ``BigAutoField`` without an id:
its key column must fill itself (an identity, AUTO_INCREMENT, SQLite's rowid). Where our field
issues the IDs, the column must not: one that did would give a row inserted without an id (raw
SQL, another service, a data migration) ``max(id) + 1``, the next ID we issue within the same
millisecond, and our INSERT would fail, or a ``.add()`` drop its row without a word.

``migrate`` makes both kinds (``KSortedFieldMixin.left_to_the_database``), but Django never
alters the key of a ManyToManyField's auto-created link table: its class follows the app's
``default_auto_field`` at run time, its column stays as it was made. So an app switched to our
``DEFAULT_AUTO_FIELD`` keeps link tables its database numbers, and an app that pins
``AutoField`` later (``startapp`` writes ``BigAutoField`` into ``apps.py``) has link tables of
ours its database does not fill.

- ``idfields.E050`` (``check --database ALIAS``, and ``migrate``): Django inserts without an id
  into a key column the database does not fill.
- ``idfields.E051`` (the same): the database numbers a key column of our IDs.
- :func:`repair` (``manage.py idfields_repair_keys``): the column as ``migrate`` makes it,
  through Django's own schema editor, rows kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from django.apps import AppConfig, apps
from django.core.checks import CheckMessage, Error, Tags, register
from django.db import connections, router
from django.db import models as db_models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import AutoField, BigAutoField, BigIntegerField, Field, Model

from idfields.django_app.fields import KSortedFieldMixin

# Implementation: nothing here is API (Django reaches this module through the app).
__all__: list[str] = []

_NUMBERING = frozenset({"AutoField", "BigAutoField", "SmallAutoField"})


class Mismatch(NamedTuple):
    """A table whose key column disagrees with who numbers its rows."""

    model: type[Model]
    by_database: bool  # True: Django inserts without an id; False: our field issues the IDs
    kind: str  # Django's field name for the column as it is (introspected)


def _numbered_by(models: Iterable[type[Model]], alias: str) -> Iterator[tuple[type[Model], bool]]:
    """``(model, by_database)`` for each auto-created link table of ``alias`` keyed by Django's
    auto field or ours.

    Only those: any other model's key column is made and altered by its own migrations, which
    name its field (a pending one is ``migrate``'s to apply, not ours to report).
    """
    for model in models:
        opts = model._meta
        if not (opts.auto_created and opts.managed) or not router.allow_migrate_model(alias, model):
            continue
        pk: object = opts.pk
        if isinstance(pk, KSortedFieldMixin):
            yield model, False
        elif isinstance(pk, AutoField):
            yield model, True


def mismatched(alias: str, models: Iterable[type[Model]] | None = None) -> list[Mismatch]:
    """The tables of ``alias`` that exist and whose key column is at odds with its numbering."""
    if models is None:
        models = apps.get_models(include_auto_created=True)
    connection = connections[alias]
    introspection = connection.introspection
    found = []
    with connection.cursor() as cursor:
        tables = set(introspection.table_names(cursor))
        for model, by_database in _numbered_by(models, alias):
            table = model._meta.db_table
            if table not in tables:
                continue
            column = _pk(model).column
            for info in introspection.get_table_description(cursor, table):
                if info.name != column:
                    continue
                numbers = _numbers_rows(connection, info)
                fills = numbers or info.default is not None
                # Django's rows need a column that fills itself; ours, one that never numbers.
                if not fills if by_database else numbers:
                    kind = introspection.get_field_type(info.type_code, info)
                    found.append(Mismatch(model, by_database, kind))
    return found


def _pk(model: type[Model]) -> Field[Any, Any]:
    return model._meta.pk  # a concrete model always has one


def _numbers_rows(connection: BaseDatabaseWrapper, info: Any) -> bool:
    """Whether the database numbers a row inserted without this key column (max(id) + 1 or a
    sequence of its own), as opposed to a DEFAULT such as ``idfields.next_snowflake()``."""
    if connection.vendor == "sqlite":  # only a key declared exactly INTEGER is the rowid
        return str(info.type_code).lower() == "integer"
    kind = connection.introspection.get_field_type(info.type_code, info)
    return kind in _NUMBERING


def repair(alias: str, mismatch: Mismatch) -> None:
    """Give the key column the shape ``migrate`` gives it, rows kept.

    BigAutoField's column where Django inserts without an id; a plain bigint where our field
    issues the IDs (a 32-bit column is widened on the way). Both stay bigint: the column may
    hold 64-bit values already.
    """
    model, pk = mismatch.model, _pk(mismatch.model)
    old: Field[Any, Any] = getattr(db_models, mismatch.kind)(primary_key=True)
    new: Field[Any, Any] = (BigAutoField if mismatch.by_database else BigIntegerField)(
        primary_key=True
    )
    for field in (old, new):
        field.set_attributes_from_name(pk.name)
        field.column = pk.column
        field.model = model
    with connections[alias].schema_editor() as editor:
        editor.alter_field(model, old, new)


@register(Tags.database)
def check_link_keys(
    app_configs: Sequence[AppConfig] | None = None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[CheckMessage]:
    """E050 / E051 for each table of ``databases`` whose key column is at odds with who numbers
    its rows."""
    models = (
        None
        if app_configs is None
        else [m for c in app_configs for m in c.get_models(include_auto_created=True)]
    )
    return [
        _message(alias, mismatch)
        for alias in databases or ()
        for mismatch in mismatched(alias, models)
    ]


def _message(alias: str, mismatch: Mismatch) -> CheckMessage:
    opts = mismatch.model._meta
    table, key = opts.db_table, type(opts.pk).__name__
    repair_it = f"Run 'python manage.py idfields_repair_keys --database {alias}': it "
    if mismatch.by_database:
        return Error(
            f"table {table} in database {alias!r} has a key column the database does not "
            f"fill, but {opts.label} inserts its rows without an id ({key}): each insert "
            "fails or writes nothing.",
            hint=repair_it + "gives the column an identity (AUTO_INCREMENT, SQLite's rowid) "
            "and keeps every row.",
            obj=f"{alias}:{table}",
            id="idfields.E050",
        )
    return Error(
        f"table {table} in database {alias!r} has a key column the database numbers itself "
        f"({mismatch.kind}), but {opts.label} issues its IDs ({key}): a row inserted without "
        "an id takes max(id) + 1, the next ID issued within the same millisecond, so that "
        "INSERT fails, or a ManyToMany add() drops its row without a word.",
        hint=repair_it + "makes the column a plain bigint and keeps every row.",
        obj=f"{alias}:{table}",
        id="idfields.E051",
    )
