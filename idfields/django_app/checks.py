"""System checks of the IDFIELDS setting and of every installed model that stores our IDs.

Settings:

- ``idfields.E001`` an unknown IDFIELDS key (a typo silently changes nothing);
- ``idfields.E002`` NODE_SOURCE is not one of lease / static / env / development;
- ``idfields.E003`` NODE_SOURCE "static" without NODE;
- ``idfields.E004`` NODE is out of range for a layout in use;
- ``idfields.E005`` NODE_SOURCE "development" in production (two processes, one node);
- ``idfields.E006`` DATABASE names an alias that is not in DATABASES;
- ``idfields.E007`` LAYOUT or a LAYOUTS entry cannot be resolved;
- ``idfields.E008`` IDFIELDS is not a dict, or a value has the wrong type or is out of range
  (``LEASE_TTL: "60"``, ``JS_SAFE: "no"``); the value is ignored until fixed;
- ``idfields.W001`` NODE_SOURCE "env" and this process has no node variable;
- ``idfields.W002`` a layout in use runs out within 10 years;
- ``idfields.W003`` JS_SAFE is set but a layout in use makes IDs above 2**53-1;
- ``idfields.I001`` the generators run the pure-Python core (and why), not the compiled one.

Models (third-party apps included):

- ``idfields.E020`` a GenericForeignKey's ``object_id`` narrower than bigint while some model has
  an idfields primary key: the first such ID stored overflows ("integer out of range"); it
  clears once the database column is bigint (``WidenObjectId``);
- ``idfields.E021`` a foreign key to an ID column whose column type is not bigint, or an integer
  column of a multi-column ``ForeignObject`` that holds our IDs (cleared, like E020, once the
  database column is bigint).

Database (``manage.py check --database default``):

- ``idfields.E040`` a DecimalId layout is in use and no launch is recorded (``idfields_launch``);
- ``idfields.W020`` the current launch has used more than half its generator ids.
- ``idfields.W041`` two PostgreSQL aliases record node ranges that share nodes: both issue
  the same IDs (``manage.py idfields_ranges`` lists the ranges).

Field checks (``idfields.E030``, ``E031``, ``E032``, ``E035``) live on the fields themselves; the
public-ID key checks (``idfields.E009`` a weak, short or clashing key, ``E010`` no key for a
model with ``PublicId``) in :mod:`idfields.django_app.public`.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.apps import AppConfig, apps
from django.conf import settings as django_settings
from django.core.checks import CheckMessage, Error, Info, Tags, Warning, register
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, router
from django.db.migrations.loader import MigrationLoader
from django.db.models import BigIntegerField, Model

from idfields.coordination._report import launch_room
from idfields.django_app.conf import NODE_SOURCES, IdFieldsSettings, get_settings
from idfields.django_app.fields import KSortedFieldMixin, id_columns
from idfields.django_app.noderanges import alias_ranges
from idfields.django_app.sources import coordination_database
from idfields.django_app.widening import is_widened
from idfields.errors import IdFieldsError, NodeNotConfigured
from idfields.generators._hotpath import core_status
from idfields.layouts import MAX_JS_SAFE_ID, Layout, Node
from idfields.nodes import StaticNode, development_mode
from idfields.sql import noderange

HORIZON = timedelta(days=3653)  # "runs out within 10 years"
# Django's names (model and introspection) for integer columns too narrow for a 63-bit ID.
NARROW_INTEGERS = frozenset(
    {
        "AutoField",
        "IntegerField",
        "PositiveIntegerField",
        "PositiveSmallIntegerField",
        "SmallAutoField",
        "SmallIntegerField",
    }
)
_SETTING = "the IDFIELDS setting"


@register(Tags.compatibility)
def check_settings(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[Any]:
    """Validate IDFIELDS against the layouts the project uses."""
    settings = get_settings()
    messages: list[CheckMessage] = [
        *_unknown_keys(settings),
        *_invalid_values(settings),
        *_node_source(settings),
        *_database(settings),
    ]
    layouts, errors = _layouts_in_use(settings)
    messages += errors
    for layout in layouts:
        messages += _layout_messages(settings, layout)
    return messages


@register(Tags.compatibility)
def check_core(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[Any]:
    """Say when the generators run the pure-Python core, and why: it is several times slower
    per ID, and nothing else shows it (``idfields --version`` prints the same line)."""
    status = core_status()
    if status.compiled:
        return []
    return [Info(str(status), obj=_SETTING, id="idfields.I001")]


@register(Tags.models, Tags.database)
def check_models(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[Any]:
    """Columns that must hold our IDs but are narrower than bigint."""
    models = _models(app_configs)
    databases = kwargs.get("databases") or ()
    messages: list[CheckMessage] = list(_narrow_foreign_keys(models, databases))
    if any(isinstance(model._meta.pk, KSortedFieldMixin) for model in _models(None)):
        messages += _narrow_generic_keys(models, databases)
    return messages


def _unknown_keys(settings: IdFieldsSettings) -> Iterator[CheckMessage]:
    for key in settings.unknown_keys:
        yield Error(
            f"IDFIELDS[{key!r}] is not an idfields setting, so it has no effect.",
            hint="Fix the spelling or remove it; the keys are listed in idfields.django_app.conf.",
            obj=_SETTING,
            id="idfields.E001",
        )


def _invalid_values(settings: IdFieldsSettings) -> Iterator[CheckMessage]:
    for problem in settings.problems:
        yield Error(
            problem,
            hint="Until it is fixed idfields refuses to make IDs; the keys and their types are "
            "listed in idfields.django_app.conf.",
            obj=_SETTING,
            id="idfields.E008",
        )


def _database(settings: IdFieldsSettings) -> Iterator[CheckMessage]:
    if settings.database not in django_settings.DATABASES:
        yield Error(
            f"IDFIELDS['DATABASE'] = {settings.database!r} is not in DATABASES, so no node "
            "lease, launch or counter can be read or written.",
            hint=f"Use one of {', '.join(map(repr, django_settings.DATABASES))}.",
            obj=_SETTING,
            id="idfields.E006",
        )


def _node_source(settings: IdFieldsSettings) -> Iterator[CheckMessage]:
    source = settings.node_source
    if source not in NODE_SOURCES:
        yield Error(
            f"IDFIELDS['NODE_SOURCE'] = {source!r} is unknown.",
            hint=f"Use one of {', '.join(map(repr, NODE_SOURCES))} ('lease' needs no setup).",
            obj=_SETTING,
            id="idfields.E002",
        )
    elif source == "static" and settings.node is None:
        yield Error(
            "IDFIELDS['NODE_SOURCE'] is 'static' but IDFIELDS['NODE'] is not set, so no process "
            "can make an ID.",
            hint="Set NODE to this process's node id (unique per live process), or use 'lease'.",
            obj=_SETTING,
            id="idfields.E003",
        )
    elif source == "development" and not (django_settings.DEBUG or development_mode()):
        yield Error(
            "IDFIELDS['NODE_SOURCE'] is 'development' with DEBUG off: every process takes the "
            "same node, so two processes make the same IDs.",
            hint="Use 'lease' (or 'static'/'env' with a node per process) in production; "
            "IDFIELDS_DEVELOPMENT=1 marks a single-process developer setup.",
            obj=_SETTING,
            id="idfields.E005",
        )


def layout_names_in_use(settings: IdFieldsSettings) -> dict[str, str]:
    """Each layout name the settings and the model fields use -> the setting naming it, or ""."""
    names: dict[str, str] = {settings.layout: "IDFIELDS['LAYOUT']"}
    names.update({name: f"IDFIELDS['LAYOUTS'][{name!r}]" for name in settings.layouts})
    for field in _id_fields(_models(None)):
        if field.layout_name is not None:
            names.setdefault(field.layout_name, "")
    return names


def _layouts_in_use(settings: IdFieldsSettings) -> tuple[list[Layout], list[CheckMessage]]:
    """The layouts in use, resolved; a bad field layout is reported by the field (E030)."""
    names = layout_names_in_use(settings)
    layouts: dict[str, Layout] = {}
    errors: list[CheckMessage] = []
    for name, origin in names.items():
        try:
            layouts[name] = settings.resolve_layout(name)
        except (KeyError, TypeError, ImportError, ValueError, IdFieldsError) as error:
            if origin:
                errors.append(
                    Error(
                        f"{origin} cannot be resolved: {error}",
                        hint="Name a built-in layout, or map the name to a Layout (or its "
                        "dotted path) in IDFIELDS['LAYOUTS'].",
                        obj=_SETTING,
                        id="idfields.E007",
                    )
                )
    return list(dict.fromkeys(layouts.values())), errors


def _layout_messages(settings: IdFieldsSettings, layout: Layout) -> Iterator[CheckMessage]:
    # A static NODE fills single-node layouts; several node fields come from the environment.
    static = settings.node_source == "static" and settings.node is not None
    if static and len(layout.node_fields) == 1:
        try:
            StaticNode(settings.node).values_for(layout)
        except IdFieldsError as error:
            yield Error(
                f"IDFIELDS['NODE'] = {settings.node!r} does not fit layout {layout.name!r}: "
                f"{error}",
                hint=f"Use a node in {_node_range(layout)}, or NODE_SOURCE 'lease'.",
                obj=_SETTING,
                id="idfields.E004",
            )
    if settings.node_source == "env":
        yield from _missing_env(layout)
    yield from _exhaustion(layout)
    if settings.js_safe and layout.max_id > MAX_JS_SAFE_ID:
        yield Warning(
            f"IDFIELDS['JS_SAFE'] is set but layout {layout.name!r} makes IDs up to "
            f"{layout.max_id:,}, beyond JavaScript's 2**53-1.",
            hint="Use a JS-safe layout (e.g. 'snowflake_js') for columns sent to JavaScript as "
            "numbers, or set IDS_AS_STRINGS and serialize IDs as strings.",
            obj=_SETTING,
            id="idfields.W003",
        )


def _node_range(layout: Layout) -> str:
    return ", ".join(f"{p.name} {p.minimum}..{p.maximum}" for p in layout.node_fields)


def _missing_env(layout: Layout) -> Iterator[CheckMessage]:
    specs = [placed.spec for placed in layout.node_fields]
    missing = [spec.env for spec in specs if isinstance(spec, Node) and spec.env not in os.environ]
    if missing:
        yield Warning(
            f"IDFIELDS['NODE_SOURCE'] is 'env' but {', '.join(missing)} is not set here; layout "
            f"{layout.name!r} cannot make IDs in this process.",
            hint=f"Set {', '.join(missing)} per process ({_node_range(layout)}), or use 'lease'.",
            obj=_SETTING,
            id="idfields.W001",
        )


def _exhaustion(layout: Layout) -> Iterator[CheckMessage]:
    # A layout that has already run out cannot be built (LayoutError), so only the horizon is left.
    end = layout.runs_out
    if end is not None and end - datetime.now(UTC) < HORIZON:
        yield Warning(
            f"layout {layout.name!r} runs out of timestamps on {end:%Y-%m-%d}, within 10 years.",
            hint="Plan a layout with a later epoch or a wider timestamp before then.",
            obj=_SETTING,
            id="idfields.W002",
        )


def _models(app_configs: Sequence[AppConfig] | None) -> list[type[Model]]:
    if app_configs is None:
        return list(apps.get_models(include_auto_created=True))
    return [m for config in app_configs for m in config.get_models(include_auto_created=True)]


def _id_fields(models: Iterable[type[Model]]) -> Iterator[KSortedFieldMixin]:
    for model in models:
        for field in model._meta.local_fields:
            if isinstance(field, KSortedFieldMixin):
                yield field


def _narrow_foreign_keys(
    models: Iterable[type[Model]], databases: Iterable[str] = ()
) -> Iterator[CheckMessage]:
    connection = connections[DEFAULT_DB_ALIAS]
    bigint = BigIntegerField().db_type(connection)
    for model in models:
        for column_field, relation in id_columns(model).items():
            if isinstance(column_field, KSortedFieldMixin):
                continue  # an ID field of our own: bigint by construction
            if column_field is relation:  # a foreign key: bigint unless its class says else
                column = column_field.db_type(connection)
                if column is None or column == bigint:
                    continue
                hint = (
                    "Make the foreign key a plain ForeignKey (it takes bigint from its "
                    "target), or give its custom field a bigint db_type."
                )
            else:  # a ForeignObject's own column: declared narrow, and not widened yet
                column = column_field.get_internal_type()
                if column not in NARROW_INTEGERS or _bigint_in_database(
                    model, column_field, databases
                ):
                    continue
                hint = (
                    f"Declare {column_field.name} as a BigIntegerField (or "
                    "PositiveBigIntegerField) and migrate."
                )
            yield Error(
                f"{model._meta.label}.{column_field.name} holds idfields IDs (through "
                f"{relation.name!r}) but its column is {column!r}, not {bigint!r}: 63-bit IDs "
                "do not fit.",
                hint=hint,
                obj=column_field,
                id="idfields.E021",
            )


def _bigint_in_database(model: type[Model], field: object, databases: Iterable[str]) -> bool:
    """Whether the column is bigint already (``WidenObjectId`` or a conversion widened it while
    the field keeps its declared type). Asked only of the databases the check may use (Django
    passes them to ``migrate``'s checks); False when none may be asked or it cannot say.

    The table of an app without migrations is made from its models, where the field reports
    bigint (:mod:`idfields.django_app.widening`): no database needs asking."""
    if is_widened(field) and not _has_migrations(model):
        return True
    column = getattr(field, "column", None)
    alias = router.db_for_write(model)
    if alias not in databases:
        return False
    connection = connections[alias]
    try:
        with connection.cursor() as cursor:
            if model._meta.db_table not in connection.introspection.table_names(cursor):
                return False
            description = connection.introspection.get_table_description(
                cursor, model._meta.db_table
            )
    except DatabaseError:
        return False
    wide = {"BigIntegerField", "PositiveBigIntegerField", "BigAutoField"}
    return any(
        info.name == column
        and connection.introspection.get_field_type(info.type_code, info) in wide
        for info in description
    )


def _has_migrations(model: type[Model]) -> bool:
    """Whether the model's app has a migrations module (else ``migrate`` syncs its tables)."""
    module, _ = MigrationLoader.migrations_module(model._meta.app_label)
    if module is None:
        return False
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


def _narrow_generic_keys(
    models: Iterable[type[Model]], databases: Iterable[str] = ()
) -> Iterator[CheckMessage]:
    if not apps.is_installed("django.contrib.contenttypes"):
        return
    from django.contrib.contenttypes.fields import GenericForeignKey

    for model in models:
        for private in model._meta.private_fields:
            if not isinstance(private, GenericForeignKey) or getattr(
                private, "mti_inherited", False
            ):
                continue  # a multi-table child's copy names its parent's column: reported there
            object_id = model._meta.get_field(private.fk_field)
            kind = object_id.get_internal_type()
            if kind in NARROW_INTEGERS and not _bigint_in_database(model, object_id, databases):
                yield Error(
                    f"{model._meta.label}.{private.fk_field} (object_id of GenericForeignKey "
                    f"{private.name!r}) is a {kind}, but models of this project have 63-bit "
                    "idfields primary keys: storing one fails with 'integer out of range'.",
                    hint="Declare it PositiveBigIntegerField (or BigIntegerField) and migrate; "
                    f"for a third-party app, add WidenObjectId({model._meta.app_label!r}, "
                    f"{model._meta.object_name!r}) to a migration of one of your apps "
                    "(docs/how-to/third-party-generic-keys.md), or silence this check if the "
                    "relation never points at such a model.",
                    obj=object_id,
                    id="idfields.E020",
                )


@register(Tags.database)
def check_launch_room(
    app_configs: Sequence[AppConfig] | None = None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[Any]:
    """DecimalId: an error while no launch is recorded (the first ID would fail), a warning once
    the current launch has used more than half its generator ids.

    Every process, and every database backend calling ``next_decimal()``, takes a generator id
    of the launch for good (a counter cannot be fenced by time), so connection churn uses them up.
    """
    settings = get_settings()
    if not databases or settings.database not in databases:
        return []
    layouts, _ = _layouts_in_use(settings)
    messages: list[CheckMessage] = []
    for layout in layouts:
        if layout.timestamp is not None:
            continue
        try:
            room = launch_room(coordination_database(), layout)
        except NodeNotConfigured as error:  # no launch recorded: the first ID would fail
            if settings.node_source == "lease":
                messages.append(Error(str(error), obj=_SETTING, id="idfields.E040"))
            continue
        except (IdFieldsError, DatabaseError):
            continue  # no tables yet: migrate makes them, and the first ID names the fix
        if room.generators_used * 2 > room.generators_total:
            messages.append(
                Warning(
                    f"launch {room.launch} of layout {layout.name!r} has used "
                    f"{room.generators_used:,} of its {room.generators_total:,} generator ids "
                    "(one per process start and per database backend that generates).",
                    hint="Record a new launch (manage.py idfields_launch) at the next deploy, "
                    "and pool database connections that call next_decimal().",
                    obj=_SETTING,
                    id="idfields.W020",
                )
            )
    return messages


@register(Tags.database)
def check_node_ranges(
    app_configs: Sequence[AppConfig] | None = None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[Any]:
    """Two database aliases whose recorded node ranges share nodes (``idfields.W041``).

    A warning, not an error: databases that never exchange rows (a test database beside the
    default one) may share nodes; shards feeding one table must not."""
    if not databases:
        return []
    try:
        ranges = alias_ranges(databases)
    except DatabaseError:
        return []  # unreachable or not migrated: migrate and the other checks say so
    found = noderange.describe_overlap(ranges)
    if found is None:
        return []
    return [
        Warning(
            f"database aliases {found}: IDs made inside them repeat each other, so rows copied "
            "or replicated between them collide.",
            hint="Install the SQL functions of each database with a node range of its own "
            "(InstallIdFunctions(..., nodes=range(a, b))); manage.py idfields_ranges lists them.",
            obj="the DATABASES setting",
            id="idfields.W041",
        )
    ]
