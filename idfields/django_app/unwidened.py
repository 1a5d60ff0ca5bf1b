"""Columns that hold idfields IDs in fields declared narrower than bigint, widened in the
database only (the field keeps its declared type: :mod:`idfields.django_app.widening`): a
generic ``object_id`` (of a GenericForeignKey, or reached through a GenericRelation) while
some model has an idfields primary key, and the integer column of a multi-column
``ForeignObject`` to an ID field.

Whether such a column is bigint is a fact of the database, so the error needs the database:

- ``idfields.E020`` (object_id) / ``idfields.E021`` (ForeignObject column), tagged
  ``database`` (``check --database ALIAS``, ``migrate``, the test runner): the column is
  narrower than bigint in that database and no pending migration widens it;
- ``idfields.W021`` / ``idfields.W022`` (every command): the field is narrow and no migration
  of the project, applied or pending, widens its column with ``WidenObjectId``. Only a warning:
  a column widened another way is known to the database alone, and a command that reads no
  database (``makemigrations``, ``runserver``) must not be stopped by what only a database
  read can clear.

SQLite needs neither: its INTEGER columns hold 64 bits whatever the declared type.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from django.apps import AppConfig, apps
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.db import connections, router
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.db.models import Field, Model

from idfields.django_app.checks import NARROW_INTEGERS, models_of
from idfields.django_app.fields import KSortedFieldMixin, id_columns
from idfields.django_app.key_checks import column_kinds
from idfields.django_app.widening import generic_object_ids, is_widened

# Implementation: nothing here is API (Django reaches this module through the app).
__all__: list[str] = []

Column = tuple[str, str]  # (table, column)


@register(Tags.models)
def check_unwidened_fields(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W021/W022 for each narrow field whose column no migration widens (no database read)."""
    found = [(f, r) for f, r in narrow_id_holders(models_of(app_configs)) if _may_need_widening(f)]
    if not found:
        return []
    widened = widening_migrations()
    return [
        _message(field, relation, None, field.get_internal_type())
        for field, relation in found
        if relation is not None or _column(field) not in widened
    ]


@register(Tags.database)
def check_unwidened_columns(
    app_configs: Sequence[AppConfig] | None = None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[CheckMessage]:
    """E020/E021 for each such column still narrow in ``databases``, unless a migration not
    applied there yet widens it (``migrate`` must stay usable to apply it)."""
    found = list(narrow_id_holders(models_of(app_configs))) if databases else []
    messages: list[CheckMessage] = []
    for alias in databases or ():
        connection = connections[alias]
        if connection.vendor == "sqlite" or not found:
            continue
        wanted = {
            _column(f): (f, r) for f, r in found if router.allow_migrate_model(alias, f.model)
        }
        narrow = column_kinds(connection, wanted)
        if not narrow:
            continue
        pending = _pending(alias, widening_migrations())
        for column, kind in narrow.items():
            field, relation = wanted[column]
            if relation is not None or column not in pending:
                messages.append(_message(field, relation, alias, kind))
    return messages


def narrow_id_holders(
    models: Iterable[type[Model]],
) -> Iterator[tuple[Field[Any, Any], Field[Any, Any] | None]]:
    """Each field of ``models`` declared narrower than bigint that holds idfields IDs without
    being an ID field or a foreign key -> the ``ForeignObject`` it serves (None: an object_id)."""
    # An unmanaged model's table is not the project's migrations' to widen (W011 skips it too).
    models = [model for model in models if model._meta.managed]
    everything = apps.get_models(include_auto_created=True)
    if any(isinstance(model._meta.pk, KSortedFieldMixin) for model in everything):
        for field in generic_object_ids(models):
            if field.get_internal_type() in NARROW_INTEGERS and field.model in models:
                yield field, None
    for model in models:
        for column, relation in id_columns(model).items():
            if column is not relation and column.get_internal_type() in NARROW_INTEGERS:
                yield column, relation


def widening_migrations() -> dict[Column, list[tuple[str, str]]]:
    """(table, column) -> the migrations whose ``WidenObjectId`` widens it, read from the
    migration files alone (no database). A graph that cannot be loaded gives nothing: its
    error is ``makemigrations``' and ``migrate``'s to report."""
    try:
        graph = MigrationLoader(None, ignore_no_migrations=True).graph
    except Exception:  # a broken graph is reported by Django's commands
        return {}
    found: dict[Column, list[tuple[str, str]]] = {}
    for key, migration in graph.nodes.items():
        for operation in migration.operations:
            # Duck-typed: the operations live above this app (idfields.migrations.django).
            widened = getattr(operation, "widened_columns", None)
            if not callable(widened):
                continue
            try:
                columns = widened()
            except (LookupError, ValueError):  # names an app or model not installed
                continue
            for _, table, column in columns:
                found.setdefault((table, column), []).append(key)
    return found


def _pending(alias: str, widened: dict[Column, list[tuple[str, str]]]) -> set[Column]:
    """The columns a migration not yet applied to ``alias`` widens."""
    applied = MigrationRecorder(connections[alias]).applied_migrations()
    return {column for column, keys in widened.items() if any(k not in applied for k in keys)}


def _may_need_widening(field: Field[Any, Any]) -> bool:
    """False where no database can hold it narrow: SQLite only, or a table made from the
    model (an app without migrations), where the widened field gives bigint."""
    model = field.model
    if is_widened(field) and not _has_migrations(model):
        return False
    aliases = [alias for alias in connections if router.allow_migrate_model(alias, model)]
    return not aliases or any(connections[alias].vendor != "sqlite" for alias in aliases)


def _has_migrations(model: type[Model]) -> bool:
    """Whether the model's app has a migrations module (else ``migrate`` syncs its tables)."""
    module, _ = MigrationLoader.migrations_module(model._meta.app_label)
    if module is None:
        return False
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


def _column(field: Field[Any, Any]) -> Column:
    return field.model._meta.db_table, str(field.column)


def _message(
    field: Field[Any, Any], relation: Field[Any, Any] | None, alias: str | None, kind: str
) -> CheckMessage:
    label = f"{field.model._meta.label}.{field.name}"
    if alias is None:
        where = f"is declared {kind} and no migration widens its column"
    else:
        where = f"is {kind} in database {alias!r} and no pending migration widens it"
    if relation is None:
        app, model = field.model._meta.app_label, field.model._meta.object_name
        text = (
            f"{label} (the object_id of a GenericForeignKey or GenericRelation) {where}, but "
            "models of this project have 63-bit idfields primary keys: storing one fails with "
            "'integer out of range'."
        )
        hint = (
            "Declare it PositiveBigIntegerField (or BigIntegerField) and migrate; for a "
            f"third-party app, add WidenObjectId({app!r}, {model!r}) to a migration of one of "
            "your apps and migrate (docs/how-to/third-party-generic-keys.md), or silence this "
            "check if the relation never points at such a model."
        )
        ids = ("idfields.W021", "idfields.E020")
    else:
        text = (
            f"{label} holds idfields IDs (through {relation.name!r}) but {where} to bigint: "
            "63-bit IDs do not fit."
        )
        hint = (
            f"Declare {field.name} as a BigIntegerField (or PositiveBigIntegerField) and migrate."
        )
        ids = ("idfields.W022", "idfields.E021")
    if alias is None:
        return Warning(text, hint=hint, obj=field, id=ids[0])
    return Error(text, hint=hint, obj=field, id=ids[1])
