"""``ConvertToKSortedId``: take over a model's AUTO_INCREMENT primary key with k-sorted IDs.

Every existing row keeps its ID; the key and every column referencing it (M2M through tables
included) become bigint; serial/identity/AUTO_INCREMENT gives way to IDs made in Python
(``generation="app"``) or by ``idfields.next_snowflake()`` (``"db"``, PostgreSQL). The plan comes
from :mod:`idfields.migrations.convert`, read from the live catalog, and every statement goes
through ``schema_editor.execute``, so ``sqlmigrate`` prints exactly what runs, each statement
headed by the lock it takes and whether it rewrites the table. Backwards restores
AUTO_INCREMENT with its sequence past max(id). On SQLite an INTEGER PRIMARY KEY already holds
64-bit IDs: only the model state changes.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState
from django.db.models import Field, Model

from idfields.layouts import BUILTIN_LAYOUTS
from idfields.migrations import convert

_DEFAULTS = {"layout": "snowflake", "generation": "app", "lock_timeout": "5s"}
_FIELD_CLASSES = {"snowflake": "SnowflakeAutoField"}


class ConvertToKSortedId(Operation):
    """Convert ``model_name``'s AUTO_INCREMENT primary key to ``layout`` IDs, reversibly."""

    reversible = True
    reduces_to_sql = True
    atomic = True  # Postgres: the LOCK and the DDL must share one transaction

    def __init__(
        self,
        model_name: str,
        layout: str = "snowflake",
        generation: str = "app",
        lock_timeout: str = "5s",
    ) -> None:
        self.model_name = model_name
        self.layout = layout
        self.generation = generation
        self.lock_timeout = lock_timeout
        if layout in BUILTIN_LAYOUTS:  # user layouts resolve from settings when the op runs
            self._target()

    def _target(self) -> convert.Target:
        layout: Any = self.layout
        if layout not in BUILTIN_LAYOUTS:
            from idfields.django_app.conf import get_settings

            layout = get_settings().resolve_layout(layout)
        return convert.Target.of(layout, self.generation, self.lock_timeout)

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        kwargs = {
            name: getattr(self, name)
            for name, default in _DEFAULTS.items()
            if getattr(self, name) != default
        }
        return "idfields.migrations.django.ConvertToKSortedId", [self.model_name], kwargs

    def _new_field(self) -> Field[Any, Any]:
        from idfields.django_app import fields

        options: dict[str, Any] = {"primary_key": True, "serialize": False}
        if self.generation != "app":
            options["generation"] = self.generation
        name = _FIELD_CLASSES.get(self.layout)
        if name is not None:
            field: Field[Any, Any] = getattr(fields, name)(**options)
        else:
            field = fields.KSortedAutoField(layout=self.layout, **options)
        return field

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        model_state = state.models[app_label, self.model_name.lower()]
        pk_name = next(
            (name for name, field in model_state.fields.items() if field.primary_key), None
        )
        if pk_name is None:
            raise ValueError(f"{app_label}.{self.model_name} has no primary key to convert")
        state.alter_field(app_label, self.model_name.lower(), pk_name, self._new_field(), True)

    def _statements(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> tuple[convert.KeyInfo, convert.Target] | None:
        connection = schema_editor.connection
        model: type[Model] = state.apps.get_model(app_label, self.model_name)
        if connection.vendor not in ("postgresql", "mysql"):
            return None
        if not self.allow_migrate_model(connection.alias, model):
            return None
        meta = model._meta
        column = meta.pk.column if meta.pk is not None else None
        if column is None:
            raise ValueError(f"{meta.label} has no primary key column to convert")
        with connection.cursor() as cursor:
            query = convert.cursor_query(cursor)
            key = convert.introspect(connection.vendor, query, meta.db_table, column)
        return key, self._target()

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        found = self._statements(app_label, schema_editor, from_state)
        if found is not None:
            _execute(schema_editor, convert.forwards(*found))

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        found = self._statements(app_label, schema_editor, to_state)
        if found is not None:
            _execute(schema_editor, convert.backwards(*found))

    def describe(self) -> str:
        return (
            f"Convert {self.model_name}'s AUTO_INCREMENT key to {self.layout} IDs "
            f"(made by the {'database' if self.generation == 'db' else 'application'})"
        )

    @property
    def migration_name_fragment(self) -> str:
        return f"{self.model_name.lower()}_ksorted_id"


def _execute(
    schema_editor: BaseDatabaseSchemaEditor, statements: tuple[convert.Statement, ...]
) -> None:
    for statement in statements:
        schema_editor.execute(statement.annotated(), params=None)
