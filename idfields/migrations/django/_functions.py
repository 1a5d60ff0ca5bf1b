"""``InstallIdFunctions``: install (or upgrade) the database-side ID functions in a migration;
``InstallLayoutFunctions``: add ``idfields.next_<name>()`` for a user layout on top of them.

Each operation names an SQL version or stores the layout's definition, so a migration replays
the same way; the version the database records tells an install what it replaces. PostgreSQL
only: on other vendors, where the router says no, or with ``IDFIELDS["DATABASE_FUNCTIONS"] =
False`` (a project that makes its IDs in Python only, whose migrating role may not create a
schema), they do nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import ProjectState

from idfields import sql
from idfields.errors import InvalidArgument, MissingPrivilege
from idfields.migrations.django._base import IdFieldsOperation, execute
from idfields.sql.layouts import LayoutLike, as_layout, layout_scripts
from idfields.sql.noderange import NodeRange, node_range


def functions_wanted() -> bool:
    """``IDFIELDS["DATABASE_FUNCTIONS"]``, True unless set to False. Read from Django's settings
    directly: the migration operations sit beside ``idfields.django_app``, not on it."""
    raw = getattr(settings, "IDFIELDS", None)
    return not isinstance(raw, Mapping) or raw.get("DATABASE_FUNCTIONS", True) is not False


class _FunctionOperation(IdFieldsOperation):
    """Acts only where ``IDFIELDS["DATABASE_FUNCTIONS"]`` allows it (and vendor and router)."""

    def enabled(self) -> bool:
        return functions_wanted()


class _ScriptOperation(_FunctionOperation):
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


class InstallIdFunctions(_FunctionOperation):
    """Install SQL version ``version``, replacing the version the database records (an upgrade
    in place); the reverse goes back to the version before ``version`` that this package has,
    or drops the functions when there is none. A database holding a version this package does
    not know is refused.

    ``lease_schema`` names the schema of the idfields tables; left out, the operation finds the
    one copy on the connection's search_path when it runs, and refuses none or two (app and
    database would lease from different tables).

    ``nodes`` is the database's node range (``range(0, 512)``, ``(0, 511)`` or ``'0-511'``;
    default every node), or a dict of them by database alias (one migration for every shard;
    an alias it does not name is refused): the functions and every app process leasing from
    that database claim only there, so databases whose IDs meet (shards replicating into one)
    get disjoint ranges. Changing it is a new migration; narrowing it is refused while a live
    lease holds a node given up, and nodes gained are fenced (claims start 1 s after the
    install).
    """

    def __init__(self, version: str, lease_schema: str | None = None, nodes: object = None) -> None:
        self.version = sql.known(version)
        self.lease_schema = lease_schema
        self.nodes: NodeRange | dict[str, NodeRange]
        if isinstance(nodes, dict):
            self.nodes = {alias: node_range(limits) for alias, limits in nodes.items()}
        else:
            self.nodes = node_range(nodes)

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        kwargs: dict[str, Any] = {"version": self.version}
        if self.lease_schema is not None:
            kwargs["lease_schema"] = self.lease_schema
        if isinstance(self.nodes, dict):
            kwargs["nodes"] = {alias: _text(limits) for alias, limits in self.nodes.items()}
        elif not self.nodes.whole:
            kwargs["nodes"] = _text(self.nodes)
        # The class name, as Django's own operations give it: OperationWriter prefixes the module.
        return self.__class__.__name__, [], kwargs

    def forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        if not self.allowed(app_label, schema_editor):
            return
        try:
            self._install(self.version, schema_editor)
        except DatabaseError as error:
            if _sqlstate(error) != "42501":  # insufficient_privilege
                raise
            raise MissingPrivilege(_privilege_message(schema_editor, error)) from error

    def backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        if not self.allowed(app_label, schema_editor):
            return
        before = sql.previous(self.version)
        if before is None:
            execute(schema_editor, sql.drop_script(_installed(schema_editor), self.version))
        else:
            self._install(before, schema_editor)

    def _install(self, version: str, schema_editor: BaseDatabaseSchemaEditor) -> None:
        installed = _installed(schema_editor)
        schema = self.lease_schema
        if schema is None:
            found = _rows(schema_editor, sql.FIND_LEASE_SCHEMAS)
            schema = sql.lease_schema_from([row[0] for row in found])
        nodes = self._nodes(schema_editor.connection.alias)
        execute(schema_editor, sql.install_script(installed, version, schema, nodes))

    def _nodes(self, alias: str) -> NodeRange:
        if not isinstance(self.nodes, dict):
            return self.nodes
        if alias not in self.nodes:
            raise InvalidArgument(
                f"InstallIdFunctions(nodes=...) names no node range for database alias "
                f"{alias!r} (it names {', '.join(map(repr, self.nodes))}); add one, disjoint "
                f"from the others, or keep the idfields functions off that alias (a router)"
            )
        return self.nodes[alias]

    def describe(self) -> str:
        return f"Install idfields database functions {self.version}"

    @property
    def migration_name_fragment(self) -> str:
        return f"idfields_functions_{self.version}"


def _text(limits: NodeRange) -> str:
    return f"{limits.first}-{limits.last}"


def _rows(schema_editor: BaseDatabaseSchemaEditor, query: str) -> list[Any]:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(query)
        return list(cursor.fetchall())


def _installed(schema_editor: BaseDatabaseSchemaEditor) -> str | None:
    """The version the database records; read even when collecting SQL (sqlmigrate)."""
    return sql.installed_version([tuple(row) for row in _rows(schema_editor, sql.INSTALLED)])


class InstallLayoutFunctions(_ScriptOperation):
    """Install ``idfields.next_<name>()`` and its companions (``next_<name>_at(bigint)``,
        ``take_<name>(bigint)``, ``take_<name>_ranges(bigint)``, ``decode_<name>``) of a user
        layout over the functions ``InstallIdFunctions`` installed; the reverse drops them.

        ``layout`` is a :class:`Layout` or its ``Layout.to_spec()`` dict. The migration file stores
    the dict and the SQL the operation installs and drops (``create_sql``, ``drop_sql``, as
    django-pgtrigger stores its triggers), so neither a later edit of the project's layout nor a
    later release's renderer changes what the migration does, or stops it loading. Written by
    hand without them, the operation renders the SQL when it runs; ``sha256`` (of the create SQL)
    then refuses, when it runs, a rendering other than the one recorded.
    """

    def __init__(
        self,
        layout: LayoutLike,
        create_sql: str | None = None,
        drop_sql: str | None = None,
        sha256: str | None = None,
    ) -> None:
        # Nothing rendered here: Django imports every migration on each migrate, makemigrations
        # and test run, so a renderer that changed must not fail them.
        self.layout = as_layout(layout)
        self.create_sql, self.drop_sql, self.sha256 = create_sql, drop_sql, sha256

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        create, drop = self._scripts()
        kwargs = {"layout": self.layout.to_spec(), "create_sql": create, "drop_sql": drop}
        return self.__class__.__name__, [], kwargs

    def forwards_sql(self) -> str:
        return self._scripts()[0]

    def backwards_sql(self) -> str:
        return self._scripts()[1]

    def _scripts(self) -> tuple[str, str]:
        return layout_scripts(self.layout, self.create_sql, self.drop_sql, self.sha256)

    def describe(self) -> str:
        return f"Install idfields.next_{self.layout.name}()"

    @property
    def migration_name_fragment(self) -> str:
        return f"idfields_layout_{self.layout.name}"


def _sqlstate(error: DatabaseError) -> str | None:
    cause = error.__cause__
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)  # psycopg 3, 2
    return code if isinstance(code, str) else None


def _privilege_message(schema_editor: BaseDatabaseSchemaEditor, error: DatabaseError) -> str:
    database = schema_editor.connection.settings_dict
    role, name = database.get("USER") or "<the migrating role>", database.get("NAME")
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if first.startswith("idfields:"):  # the install's own check, which names the grant
        return str(error).strip()
    return (
        f"installing the idfields database functions failed ({first}): they live in schema "
        f"idfields, and CREATE SCHEMA idfields needs CREATE ON DATABASE. Either, as the "
        f"database owner or a superuser, GRANT CREATE ON DATABASE {name} TO {role}, and "
        "migrate again; or, if this project makes its IDs in Python only (no "
        "generation='db' field, no idfields.next_*() in SQL), set "
        "IDFIELDS['DATABASE_FUNCTIONS'] = False so migrations install no database functions"
    )
