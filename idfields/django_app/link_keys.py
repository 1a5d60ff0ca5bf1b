"""Tables whose key Django leaves to the database, yet the database does not fill.

Django inserts a row of a model keyed by its own ``AutoField`` / ``BigAutoField`` without an id
and reads the id back. A ManyToManyField's auto-created link table is made by ``migrate`` from
the migration state, which has no AppConfig: its ``id`` takes ``DEFAULT_AUTO_FIELD``, while at
run time the app's ``default_auto_field`` (contrib.auth pins ``AutoField``) decides. Our key
columns are BigAutoField's, so such a table is made fine; a database migrated while the column
was a plain ``bigint`` has link tables with no identity, AUTO_INCREMENT or SQLite rowid, where
every insert fails (PostgreSQL), is silently skipped (SQLite's ``INSERT OR IGNORE``) or writes
id 0 once (MariaDB).

- ``idfields.E050`` (``check --database ALIAS``, and ``migrate``): such a table exists.
- :func:`repair` (``manage.py idfields_repair_keys``): gives its key BigAutoField's column
  through Django's own schema editor, rows kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from django.apps import AppConfig, apps
from django.core.checks import CheckMessage, Error, Tags, register
from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import AutoField, BigAutoField, BigIntegerField, Field, Model

from idfields.django_app.fields import KSortedFieldMixin

# Implementation: nothing here is API (Django reaches this module through the app).
__all__: list[str] = []


def left_to_the_database(models: Iterable[type[Model]], alias: str) -> Iterator[type[Model]]:
    """The link models of ``alias`` whose key Django inserts without a value (its auto fields).

    Only auto-created ones: any other model's key column is made from its own migration, which
    names its field, so it fills itself unless the table is the user's own doing (a trigger).
    """
    for model in models:
        opts = model._meta
        if not (opts.auto_created and opts.managed) or not router.allow_migrate_model(alias, model):
            continue
        pk: object = opts.pk
        if not isinstance(pk, KSortedFieldMixin) and isinstance(pk, AutoField):
            yield model


def unfilled(alias: str, models: Iterable[type[Model]] | None = None) -> list[type[Model]]:
    """The models of ``alias`` whose table exists and whose key column does not fill itself."""
    if models is None:
        models = apps.get_models(include_auto_created=True)
    connection = connections[alias]
    introspection = connection.introspection
    found = []
    with connection.cursor() as cursor:
        tables = set(introspection.table_names(cursor))
        for model in left_to_the_database(models, alias):
            table = model._meta.db_table
            if table not in tables:
                continue
            column = _pk(model).column
            for info in introspection.get_table_description(cursor, table):
                if info.name == column and not _fills_itself(connection, info):
                    found.append(model)
    return found


def _pk(model: type[Model]) -> Field[Any, Any]:
    return model._meta.pk  # a concrete model always has one


def _fills_itself(connection: BaseDatabaseWrapper, info: Any) -> bool:
    """Whether an INSERT that omits this key column gets a fresh value from the database."""
    if info.default is not None:
        return True
    if connection.vendor == "sqlite":  # only a column declared INTEGER is the rowid
        return str(info.type_code).lower() == "integer"
    kind = connection.introspection.get_field_type(info.type_code, info)
    return kind in {"AutoField", "BigAutoField", "SmallAutoField"}


def repair(alias: str, model: type[Model]) -> None:
    """Make ``model``'s key column BigAutoField's (identity / AUTO_INCREMENT / rowid), rows kept.

    The column stays bigint: it may hold 64-bit values already, and it is what ``migrate``
    makes for the same table today.
    """
    pk = _pk(model)
    old: Field[Any, Any] = BigIntegerField(primary_key=True)
    new: Field[Any, Any] = BigAutoField(primary_key=True)
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
    """E050 for each table of ``databases`` whose key Django leaves to a database that does not
    fill it."""
    models = (
        None
        if app_configs is None
        else [m for c in app_configs for m in c.get_models(include_auto_created=True)]
    )
    return [
        Error(
            f"table {model._meta.db_table} in database {alias!r} has a key column the database "
            f"does not fill, but {model._meta.label} inserts its rows without an id "
            f"({type(model._meta.pk).__name__}): each insert fails or writes nothing.",
            hint=f"Run 'python manage.py idfields_repair_keys --database {alias}': it gives the "
            "column an identity (AUTO_INCREMENT, SQLite's rowid) and keeps every row.",
            obj=f"{alias}:{model._meta.db_table}",
            id="idfields.E050",
        )
        for alias in databases or ()
        for model in unfilled(alias, models)
    ]
