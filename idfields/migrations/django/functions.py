"""``InstallIdFunctions``: install (or upgrade) the database-side ID functions in a migration;
``InstallLayoutFunctions``: add ``idfields.next_<name>()`` for a user layout on top of them.

Each operation names an SQL version (and stores the layout's definition), so a migration replays
the same way forever. PostgreSQL only: on other vendors, or where the router says no, they do
nothing.
"""

from __future__ import annotations

from typing import Any

from django.db import router
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState

from idfields import sql
from idfields.sql.layouts import LayoutLike, as_layout, render_layout_function


class InstallIdFunctions(Operation):
    """Install SQL version ``version``; with ``from_version``, upgrade from it (and back)."""

    reversible = True
    reduces_to_sql = True

    def __init__(self, version: str, from_version: str | None = None) -> None:
        for name in (version, from_version):
            if name is not None and name not in sql.available():
                raise ValueError(
                    f"idfields has no SQL version {name!r}; released: {', '.join(sql.available())}"
                )
        self.version = version
        self.from_version = from_version

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        kwargs: dict[str, Any] = {"version": self.version}
        if self.from_version is not None:
            kwargs["from_version"] = self.from_version
        # The class name, as Django's own operations give it: OperationWriter prefixes the module.
        return self.__class__.__name__, [], kwargs

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        """Functions are not model state."""

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        _run(app_label, schema_editor, sql.load(self.version))

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        if self.from_version is None:
            _run(app_label, schema_editor, sql.load_drop(self.version))
        else:
            _run(app_label, schema_editor, sql.load(self.from_version))

    def describe(self) -> str:
        if self.from_version:
            return f"Upgrade idfields database functions {self.from_version} -> {self.version}"
        return f"Install idfields database functions {self.version}"

    @property
    def migration_name_fragment(self) -> str:
        return f"idfields_functions_{self.version}"


class InstallLayoutFunctions(Operation):
    """Install ``idfields.next_<name>()`` and ``next_<name>_at(bigint)`` of a user layout over
    SQL ``version`` (installed before by ``InstallIdFunctions``); the reverse drops them.

    ``layout`` is a :class:`Layout` or its ``Layout.to_spec()`` dict; the migration file stores
    the dict, so later edits of the project's layout do not change what this migration does.
    """

    reversible = True
    reduces_to_sql = True

    def __init__(self, layout: LayoutLike, version: str) -> None:
        self.layout = as_layout(layout)
        self.version = version
        # Rendered now: an inexpressible layout fails when the migration is loaded.
        self.create_sql, self.drop_sql = render_layout_function(self.layout, version)

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        kwargs = {"layout": self.layout.to_spec(), "version": self.version}
        return self.__class__.__name__, [], kwargs

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        """Functions are not model state."""

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        _run(app_label, schema_editor, self.create_sql)

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        _run(app_label, schema_editor, self.drop_sql)

    def describe(self) -> str:
        return f"Install idfields.next_{self.layout.name}() (SQL {self.version})"

    @property
    def migration_name_fragment(self) -> str:
        return f"idfields_layout_{self.layout.name}"


def _run(app_label: str, schema_editor: BaseDatabaseSchemaEditor, script: str) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql" or not router.allow_migrate(connection.alias, app_label):
        return
    schema_editor.execute(script, params=None)
