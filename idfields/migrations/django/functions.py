"""``InstallIdFunctions``: install (or upgrade) the database-side ID functions in a migration;
``InstallLayoutFunctions``: add ``idfields.next_<name>()`` for a user layout on top of them.

Each operation names an SQL version (and stores the layout's definition), so a migration replays
the same way forever. PostgreSQL only: on other vendors, or where the router says no, they do
nothing.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import ProjectState

from idfields import sql
from idfields.migrations.django.base import IdFieldsOperation, execute
from idfields.sql.layouts import (
    LayoutLike,
    as_layout,
    check_digest,
    render_layout_function,
    sql_digest,
)


class _ScriptOperation(IdFieldsOperation):
    """One SQL script each way, run where the vendor and the router allow it."""

    def forwards_sql(self) -> str:
        raise NotImplementedError

    def backwards_sql(self) -> str:
        raise NotImplementedError

    def forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        if self.allowed(app_label, schema_editor):
            execute(schema_editor, self.forwards_sql())

    def backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        if self.allowed(app_label, schema_editor):
            execute(schema_editor, self.backwards_sql())


class InstallIdFunctions(IdFieldsOperation):
    """Install SQL version ``version``; with ``from_version``, upgrade from it (and back: the
    reverse restores ``from_version`` and drops what only ``version`` has).

    ``lease_schema`` names the schema of the idfields tables (from SQL 0002 on); left out, the
    operation finds the one copy on the connection's search_path when it runs, and refuses none
    or two (app and database would lease from different tables).
    """

    def __init__(
        self, version: str, from_version: str | None = None, lease_schema: str | None = None
    ) -> None:
        for name in (version, from_version):
            if name is not None and name not in sql.available():
                raise ValueError(
                    f"idfields has no SQL version {name!r}; released: {', '.join(sql.available())}"
                )
        self.version = version
        self.from_version = from_version
        self.lease_schema = lease_schema

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        kwargs: dict[str, Any] = {"version": self.version}
        if self.from_version is not None:
            kwargs["from_version"] = self.from_version
        if self.lease_schema is not None:
            kwargs["lease_schema"] = self.lease_schema
        # The class name, as Django's own operations give it: OperationWriter prefixes the module.
        return self.__class__.__name__, [], kwargs

    def forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        if self.allowed(app_label, schema_editor):
            execute(schema_editor, self._replace(self.from_version, self.version, schema_editor))

    def backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        if not self.allowed(app_label, schema_editor):
            return
        if self.from_version is None:
            execute(schema_editor, sql.load_drop(self.version))
        else:
            execute(schema_editor, self._replace(self.version, self.from_version, schema_editor))

    def _replace(self, old: str | None, new: str, schema_editor: BaseDatabaseSchemaEditor) -> str:
        """``new`` installed over ``old``, then what only ``old`` had dropped: a downgrade
        leaves exactly ``new``'s functions, so reversing ``new`` can drop the schema."""
        script = self._script(new, schema_editor)
        return script if old is None else script + sql.load_leftovers(old, new)

    def _script(self, version: str, schema_editor: BaseDatabaseSchemaEditor) -> str:
        if not sql.needs_lease_schema(version):
            return sql.load(version)
        schema = self.lease_schema
        if schema is None:
            with schema_editor.connection.cursor() as cursor:
                cursor.execute(sql.FIND_LEASE_SCHEMAS)
                schema = sql.lease_schema_from([row[0] for row in cursor.fetchall()])
        return sql.load(version, lease_schema=schema)

    def describe(self) -> str:
        if self.from_version:
            return f"Upgrade idfields database functions {self.from_version} -> {self.version}"
        return f"Install idfields database functions {self.version}"

    @property
    def migration_name_fragment(self) -> str:
        return f"idfields_functions_{self.version}"


class InstallLayoutFunctions(_ScriptOperation):
    """Install ``idfields.next_<name>()`` and ``next_<name>_at(bigint)`` of a user layout over
    SQL ``version`` (installed before by ``InstallIdFunctions``); the reverse drops them.

    ``layout`` is a :class:`Layout` or its ``Layout.to_spec()`` dict; the migration file stores
    the dict, so later edits of the project's layout do not change what this migration does.
    It also stores ``sha256``, the digest of the SQL rendered when it was written: a renderer
    that would now install anything else is refused when the migration is loaded.
    """

    def __init__(self, layout: LayoutLike, version: str, sha256: str | None = None) -> None:
        self.layout = as_layout(layout)
        self.version = version
        # Rendered now: an inexpressible layout, or SQL other than recorded, fails on load.
        self.create_sql, self.drop_sql = render_layout_function(self.layout, version)
        check_digest(self.layout, version, self.create_sql, sha256)

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        kwargs = {
            "layout": self.layout.to_spec(),
            "version": self.version,
            "sha256": sql_digest(self.create_sql),
        }
        return self.__class__.__name__, [], kwargs

    def forwards_sql(self) -> str:
        return self.create_sql

    def backwards_sql(self) -> str:
        return self.drop_sql

    def describe(self) -> str:
        return f"Install idfields.next_{self.layout.name}() (SQL {self.version})"

    @property
    def migration_name_fragment(self) -> str:
        return f"idfields_layout_{self.layout.name}"
