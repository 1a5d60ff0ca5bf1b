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

- ``idfields.E021`` a foreign key to an ID column whose field class gives a column narrower
  than bigint.

Columns widened in the database only (a generic ``object_id``, a ``ForeignObject``'s own
integer column): ``idfields.W021``/``W022`` and, reading the database, ``idfields.E020``/
``E021`` in :mod:`idfields.django_app.unwidened`.

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

import os
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.apps import AppConfig, apps
from django.conf import settings as django_settings
from django.core.checks import CheckMessage, Error, Info, Tags, Warning, register
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.models import BigIntegerField, Model

from idfields.coordination._report import launch_room
from idfields.django_app.conf import NODE_SOURCES, IdFieldsSettings, get_settings
from idfields.django_app.fields import KSortedFieldMixin, id_columns
from idfields.django_app.noderanges import alias_ranges
from idfields.django_app.sources import coordination_database
from idfields.errors import IdFieldsError, NodeNotConfigured
from idfields.generators._hotpath import core_status
from idfields.layouts import MAX_JS_SAFE_ID, Layout, Node
from idfields.nodes import StaticNode, development_mode
from idfields.sql import noderange

# Implementation: nothing here is API (Django reaches this module through the app).
__all__: list[str] = []

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


@register(Tags.models)
def check_models(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[Any]:
    """Foreign keys to our IDs whose field class gives a column narrower than bigint."""
    return list(_narrow_foreign_keys(models_of(app_configs)))


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
    for field in _id_fields(models_of(None)):
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


def models_of(app_configs: Sequence[AppConfig] | None) -> list[type[Model]]:
    """The models of ``app_configs`` (every installed one for None), auto-created included."""
    if app_configs is None:
        return list(apps.get_models(include_auto_created=True))
    return [m for config in app_configs for m in config.get_models(include_auto_created=True)]


def _id_fields(models: Iterable[type[Model]]) -> Iterator[KSortedFieldMixin]:
    for model in models:
        for field in model._meta.local_fields:
            if isinstance(field, KSortedFieldMixin):
                yield field


def _narrow_foreign_keys(models: Iterable[type[Model]]) -> Iterator[CheckMessage]:
    connection = connections[DEFAULT_DB_ALIAS]
    bigint = BigIntegerField().db_type(connection)
    for model in models:
        for column_field, relation in id_columns(model).items():
            if isinstance(column_field, KSortedFieldMixin) or column_field is not relation:
                continue  # an ID field (bigint), or a ForeignObject's own column (unwidened.py)
            column = column_field.db_type(connection)
            if column is None or column == bigint:
                continue
            yield Error(
                f"{model._meta.label}.{column_field.name} holds idfields IDs (through "
                f"{relation.name!r}) but its column is {column!r}, not {bigint!r}: 63-bit IDs "
                "do not fit.",
                hint="Make the foreign key a plain ForeignKey (it takes bigint from its "
                "target), or give its custom field a bigint db_type.",
                obj=column_field,
                id="idfields.E021",
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
