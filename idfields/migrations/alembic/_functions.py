"""``op.install_id_functions(version, lease_schema=None, nodes=None)`` and
``op.drop_id_functions(version)``: the database-side ID functions in an Alembic migration;
``op.install_layout_functions(layout, ...)`` and ``op.drop_layout_functions(layout, ...)``:
``idfields.next_<name>()`` of a user layout on top of them.

The SQL is the versioned file the migration names, emitted through ``operations.execute`` one
statement at a time (as every driver takes it, asyncpg included), or verbatim by
``alembic upgrade --sql``. PostgreSQL only: on other dialects the operations do
nothing. An install replaces the version the database records (an upgrade or a downgrade in
place, dropping what only the replaced version had), so a downgrade writes
``op.install_id_functions("<the older version>")``; a database holding a version this package
does not know is refused. The functions name the idfields tables' schema: ``lease_schema``, or
the one the migration's ``target_metadata`` puts them in, or (online) the one copy on the
connection's search_path; none or two copies are refused.
``nodes`` is the database's node range (see ``InstallIdFunctions``; default every node).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic.operations import MigrateOperation, Operations
from sqlalchemy import text

from idfields import sql
from idfields.errors import InvalidArgument
from idfields.layouts import Layout
from idfields.sql.layouts import LayoutLike, as_layout, layout_scripts
from idfields.sql.noderange import node_range
from idfields.sql.scripts import statements


@Operations.register_operation("install_id_functions")
class InstallIdFunctionsOp(MigrateOperation):
    """Install SQL ``version`` over whatever version the database records; the reverse goes
    back to the version before it (or drops the functions when there is none)."""

    def __init__(self, version: str, lease_schema: str | None = None, nodes: object = None) -> None:
        self.version = sql.known(version)
        self.lease_schema = lease_schema
        self.nodes = node_range(nodes)

    @classmethod
    def install_id_functions(
        cls,
        operations: Operations,
        version: str,
        lease_schema: str | None = None,
        nodes: object = None,
    ) -> None:
        """Install (or upgrade or downgrade to) the idfields SQL functions of ``version``,
        issuing on ``nodes`` (default every node)."""
        operations.invoke(cls(version, lease_schema, nodes))

    def reverse(self) -> MigrateOperation:
        before = sql.previous(self.version)
        if before is None:
            return DropIdFunctionsOp(self.version)
        return InstallIdFunctionsOp(before, self.lease_schema, self.nodes)


@Operations.register_operation("drop_id_functions")
class DropIdFunctionsOp(MigrateOperation):
    """Drop the functions the database holds (of ``version``, or another version this package
    knows); refused while a column default still calls one."""

    def __init__(self, version: str) -> None:
        self.version = sql.known(version)

    @classmethod
    def drop_id_functions(cls, operations: Operations, version: str) -> None:
        """Drop the idfields SQL functions of ``version`` (and schema ``idfields``)."""
        operations.invoke(cls(version))

    def reverse(self) -> InstallIdFunctionsOp:
        return InstallIdFunctionsOp(self.version)


class _LayoutFunctionsOp(MigrateOperation):
    """A user layout's functions; ``layout`` is a :class:`Layout` or its ``Layout.to_spec()``
    dict (write the dict into the migration so it replays the same way). ``create_sql`` and
    ``drop_sql``: the SQL the migration installs and drops, stored in it so a later release's
    renderer never changes it; left out, it is rendered when the operation runs, and
    ``sha256`` (``idfields.sql.layouts.sql_digest`` of the create SQL) refuses then a rendering
    other than the one recorded."""

    def __init__(
        self,
        layout: LayoutLike,
        create_sql: str | None = None,
        drop_sql: str | None = None,
        sha256: str | None = None,
    ) -> None:
        self.layout = as_layout(layout)
        self.create_sql, self.drop_sql, self.sha256 = create_sql, drop_sql, sha256

    def scripts(self) -> tuple[str, str]:
        """(create SQL, drop SQL), rendered when the operation runs unless stored."""
        return layout_scripts(self.layout, self.create_sql, self.drop_sql, self.sha256)

    def arguments(self) -> tuple[Layout, str | None, str | None, str | None]:
        return self.layout, self.create_sql, self.drop_sql, self.sha256


@Operations.register_operation("install_layout_functions")
class InstallLayoutFunctionsOp(_LayoutFunctionsOp):
    """Install ``idfields.next_<name>()`` and its companions of a user layout."""

    @classmethod
    def install_layout_functions(
        cls,
        operations: Operations,
        layout: LayoutLike,
        create_sql: str | None = None,
        drop_sql: str | None = None,
        sha256: str | None = None,
    ) -> None:
        """Install the ID functions of ``layout``."""
        operations.invoke(cls(layout, create_sql, drop_sql, sha256))

    def reverse(self) -> DropLayoutFunctionsOp:
        return DropLayoutFunctionsOp(*self.arguments())


@Operations.register_operation("drop_layout_functions")
class DropLayoutFunctionsOp(_LayoutFunctionsOp):
    """Drop a user layout's functions; refused while a column default still calls one."""

    @classmethod
    def drop_layout_functions(
        cls,
        operations: Operations,
        layout: LayoutLike,
        create_sql: str | None = None,
        drop_sql: str | None = None,
        sha256: str | None = None,
    ) -> None:
        """Drop the ID functions of ``layout``."""
        operations.invoke(cls(layout, create_sql, drop_sql, sha256))

    def reverse(self) -> InstallLayoutFunctionsOp:
        return InstallLayoutFunctionsOp(*self.arguments())


def _execute(operations: Operations, script: str) -> None:
    context = operations.get_context()
    if context.as_sql:
        # Offline: the file verbatim. Compiling it would double its percent signs under the
        # driver's pyformat paramstyle (format('%I') would then read '%%I').
        context.impl.static_output(script.rstrip() + "\n")
        return
    # One statement at a time: asyncpg prepares each, and refuses a script of several. text()
    # would read ":name" as a bind parameter: escape the colons (casts, strings).
    for statement in statements(script):
        operations.execute(text(statement.replace(":", r"\:")))


def _installed(operations: Operations) -> str | None:
    rows = operations.get_bind().exec_driver_sql(sql.INSTALLED).fetchall()
    return sql.installed_version([(row[0], row[1]) for row in rows])


def _lease_schema(operations: Operations, operation: InstallIdFunctionsOp) -> str:
    if operation.lease_schema is not None:
        return operation.lease_schema
    named = _target_schema(operations)
    if named is not None:
        return named
    if operations.get_context().as_sql:
        raise InvalidArgument(
            f"idfields: offline (--sql) install of SQL {operation.version} cannot look up the "
            f"idfields tables' schema; pass lease_schema='<schema>' to op.install_id_functions"
        )
    rows = operations.get_bind().exec_driver_sql(sql.FIND_LEASE_SCHEMAS).fetchall()
    return sql.lease_schema_from([row[0] for row in rows])


def _target_schema(operations: Operations) -> str | None:
    """The schema the migration's ``target_metadata`` puts ``idfields_node_lease`` in (as the
    connection's ``schema_translate_map`` translates it), where it names one: the tables are
    where ``create_all`` and autogenerate put them, whatever the search_path holds."""
    context = operations.get_context()
    target = context.opts.get("target_metadata")
    metadatas = target if isinstance(target, Sequence) else [] if target is None else [target]
    tables = [
        table
        for metadata in metadatas
        for table in metadata.tables.values()
        if table.name == "idfields_node_lease"
    ]
    if context.as_sql:
        schemas = {table.schema for table in tables}
    else:
        schemas = {operations.get_bind().schema_for_object(table) for table in tables}
    if len(schemas) > 1:
        raise InvalidArgument(
            f"idfields: target_metadata holds idfields_node_lease in {len(schemas)} schemas "
            f"({', '.join(sorted(map(str, schemas)))}); pass lease_schema='<the schema the app "
            "uses>' to op.install_id_functions"
        )
    return next(iter(schemas), None)


@Operations.implementation_for(InstallIdFunctionsOp)
def _install(operations: Operations, operation: InstallIdFunctionsOp) -> None:
    if operations.get_context().dialect.name != "postgresql":
        return
    schema = _lease_schema(operations, operation)
    if operations.get_context().as_sql:  # no database to read: guard it in the script
        script = sql.offline_install_script(operation.version, schema, operation.nodes)
    else:
        script = sql.install_script(
            _installed(operations), operation.version, schema, operation.nodes
        )
    _execute(operations, script)


@Operations.implementation_for(DropIdFunctionsOp)
def _drop(operations: Operations, operation: DropIdFunctionsOp) -> None:
    if operations.get_context().dialect.name != "postgresql":
        return
    if operations.get_context().as_sql:
        script = sql.load_drop(operation.version)
    else:
        script = sql.drop_script(_installed(operations), operation.version)
    _execute(operations, script)


@Operations.implementation_for(InstallLayoutFunctionsOp)
def _install_layout(operations: Operations, operation: InstallLayoutFunctionsOp) -> None:
    if operations.get_context().dialect.name == "postgresql":
        _execute(operations, operation.scripts()[0])


@Operations.implementation_for(DropLayoutFunctionsOp)
def _drop_layout(operations: Operations, operation: DropLayoutFunctionsOp) -> None:
    if operations.get_context().dialect.name == "postgresql":
        _execute(operations, operation.scripts()[1])
