"""System checks that the project's keys really are ours, in the models and in the database.

- ``idfields.W010``: ``DEFAULT_AUTO_FIELD`` names an idfields field, but an app of the project
  overrides it with ``AppConfig.default_auto_field`` (``startapp`` writes BigAutoField into every
  new ``apps.py``), so its models silently number their rows 1, 2, 3... Only the project's own
  apps (under the folder of the settings' top-level package) are named: Django's contrib apps
  and third-party apps, installed or on the path from a checkout, pin their keys on purpose
  (their migrations say so) and are left alone.
- ``idfields.W011`` (``check --database ALIAS``, and ``migrate``): a column that must hold our
  IDs (an idfields key or ID column, a foreign key or multi-table link to one, a
  GenericForeignKey ``object_id``) is narrower than bigint in the database although the model
  says bigint, e.g. created as ``integer`` by a third-party app's committed migrations. Once per
  column, however many models share it. A Warning, not an Error: ``migrate`` runs these checks
  and must stay usable to fix it. SQLite is exempt: its INTEGER columns hold 64 bits.
"""

from __future__ import annotations

import importlib.util
import sysconfig
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from django.apps import AppConfig, apps
from django.conf import settings
from django.core.checks import CheckMessage, Tags, Warning, register
from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model
from django.utils.module_loading import import_string

from idfields.django_app.checks import NARROW_INTEGERS, models_of
from idfields.django_app.fields import KSortedFieldMixin, id_columns
from idfields.django_app.widening import generic_object_ids

# Implementation: nothing here is API (Django reaches this module through the app).
__all__: list[str] = []

_INSTALLED = {Path(sysconfig.get_path(name)).resolve() for name in ("purelib", "platlib")}


@register(Tags.models)
def check_app_key_overrides(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W010 for every project app whose ``default_auto_field`` hides ours."""
    if not _is_ours(settings.DEFAULT_AUTO_FIELD):
        return []
    configs = app_configs if app_configs is not None else apps.get_app_configs()
    return list(_overrides(configs))


def _is_ours(path: str) -> bool:
    try:
        field = import_string(path)
    except ImportError:
        return False  # Django's own check names a DEFAULT_AUTO_FIELD that does not import
    return isinstance(field, type) and issubclass(field, KSortedFieldMixin)


def _overrides(configs: Iterable[AppConfig]) -> Iterator[CheckMessage]:
    for config in configs:
        if (
            not config._is_default_auto_field_overridden  # type: ignore[attr-defined]
            or _is_ours(config.default_auto_field)
            or config.name.startswith("django.")
            or config.name.startswith("idfields.")
            or _is_installed_package(config)
            or not _in_project(config)
        ):
            continue
        models = [
            str(model._meta.object_name)
            for model in config.get_models()
            if model._meta.pk is not None
            and model._meta.pk.auto_created
            and model._meta.pk.remote_field is None  # not a multi-table child's parent link
            and not isinstance(model._meta.pk, KSortedFieldMixin)
        ]
        if not models:
            continue
        apps_py = Path(config.path) / "apps.py"
        yield Warning(
            f"{type(config).__qualname__}.default_auto_field = {config.default_auto_field!r} "
            f"overrides DEFAULT_AUTO_FIELD = {settings.DEFAULT_AUTO_FIELD!r}, so the models of "
            f"app {config.label!r} ({', '.join(models)}) number their rows 1, 2, 3... instead "
            "of taking idfields IDs.",
            hint=f"Delete the default_auto_field line from {apps_py} (startapp writes it), then "
            "run makemigrations; or set it to the DEFAULT_AUTO_FIELD value.",
            obj=config.label,
            id="idfields.W010",
        )


def _project_root() -> Path | None:
    """The folder holding the settings' top-level package (where manage.py usually is)."""
    module = getattr(settings, "SETTINGS_MODULE", None)
    spec = importlib.util.find_spec(module.partition(".")[0]) if module else None
    if spec is None:
        return None
    if spec.submodule_search_locations:  # a package (a namespace package has no origin)
        return Path(next(iter(spec.submodule_search_locations))).resolve().parent
    return Path(spec.origin).resolve().parent if spec.origin else None


def _in_project(config: AppConfig) -> bool:
    """An app under the project's folder is the project's to change; one elsewhere (a vendored
    or checked-out third-party app on the path) pins its keys as its migrations say."""
    root = _project_root()
    return root is None or Path(config.path).resolve().is_relative_to(root)


def _is_installed_package(config: AppConfig) -> bool:
    """An app from site-packages: its keys are fixed by its own migrations, not ours to change."""
    path = Path(config.path).resolve()
    return any(path.is_relative_to(root) for root in _INSTALLED)


@register(Tags.database)
def check_database_columns(
    app_configs: Sequence[AppConfig] | None = None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[CheckMessage]:
    """W011 for every column of ``databases`` narrower than the IDs it must hold."""
    models = models_of(app_configs)
    messages: list[CheckMessage] = []
    for alias in databases or ():
        connection = connections[alias]
        if connection.vendor == "sqlite":
            continue
        wanted = {
            (field.model._meta.db_table, str(field.column)): (field.model, field)
            for field in _id_columns(models)
            if router.allow_migrate_model(alias, field.model)
        }
        for (table, column), kind in column_kinds(connection, wanted).items():
            model, field = wanted[table, column]
            messages.append(_narrow_column(alias, table, column, kind, model, field))
    return messages


def _id_columns(models: list[type[Model]]) -> Iterator[Field[Any, Any]]:
    """The columns of ``models`` that hold idfields IDs and that the models declare bigint
    (one declared narrow is E020's or E021's)."""
    own = [model for model in models if not model._meta.proxy and model._meta.managed]
    for model in own:
        for field in id_columns(model):
            if field.get_internal_type() not in NARROW_INTEGERS:
                yield field
    for field in generic_object_ids(own):
        if field.get_internal_type() not in NARROW_INTEGERS and field.model in own:
            yield field


def column_kinds(
    connection: BaseDatabaseWrapper, wanted: dict[tuple[str, str], Any]
) -> dict[tuple[str, str], str]:
    """(table, column) -> Django's field name for its type, for the narrow ones that exist."""
    introspection = connection.introspection
    found: dict[tuple[str, str], str] = {}
    with connection.cursor() as cursor:
        tables = set(introspection.table_names(cursor))
        for table in sorted({table for table, _ in wanted} & tables):
            for info in introspection.get_table_description(cursor, table):
                if (table, info.name) not in wanted:
                    continue
                kind = introspection.get_field_type(info.type_code, info)
                if kind in NARROW_INTEGERS:
                    found[table, info.name] = kind
    return found


def _narrow_column(
    alias: str, table: str, column: str, kind: str, model: type[Model], field: Field[Any, Any]
) -> CheckMessage:
    app = model._meta.app_label
    return Warning(
        f"column {table}.{column} in database {alias!r} is {kind} (32 bits), but it holds "
        f"idfields IDs ({model._meta.label}.{field.name}); storing the first 63-bit ID fails "
        "('integer out of range').",
        hint=f"Widen it to bigint: if app {app!r} is yours, run makemigrations {app} and "
        "migrate (ConvertToKSortedId moves a key with rows, and every column referencing it); "
        "for a third-party app, do it in a migration of one of your apps (RunSQL 'ALTER TABLE "
        f"{table} ALTER COLUMN {column} TYPE bigint' on PostgreSQL), or fork its migrations "
        "with MIGRATION_MODULES.",
        obj=f"{alias}:{table}.{column}",
        id="idfields.W011",
    )
