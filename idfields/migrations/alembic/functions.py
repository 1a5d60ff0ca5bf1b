"""``op.install_id_functions(version, from_version=None, lease_schema=None)`` and
``op.drop_id_functions(version)``: the database-side ID functions in an Alembic migration;
``op.install_layout_functions(layout, version, sha256=None)`` and
``op.drop_layout_functions(layout, version)``: ``idfields.next_<name>()`` of a user layout on
top of them.

The SQL is the immutable versioned file the migration names, emitted through
``operations.execute`` so ``alembic upgrade --sql`` prints it. PostgreSQL only: on other
dialects the operations do nothing. A downgrade reverses an install with
``op.drop_id_functions(version)``, an upgrade with
``op.install_id_functions(from_version, from_version=version)``: that restores the older
version and drops what only the newer one has, so the next step back can drop the schema.
From SQL 0002 on the functions name the idfields tables' schema: ``lease_schema``, or (online)
the one copy on the connection's search_path; none or two copies are refused.
"""

from __future__ import annotations

from alembic.operations import MigrateOperation, Operations
from sqlalchemy import text

from idfields import sql
from idfields.sql.layouts import LayoutLike, as_layout, check_digest, render_layout_function


def _released(version: str) -> str:
    if version not in sql.available():
        raise ValueError(
            f"idfields has no SQL version {version!r}; released: {', '.join(sql.available())}"
        )
    return version


@Operations.register_operation("install_id_functions")
class InstallIdFunctionsOp(MigrateOperation):
    """Install SQL ``version`` over ``from_version`` (either older or newer) and drop what
    only ``from_version`` has; the reverse goes back the same way."""

    def __init__(
        self, version: str, from_version: str | None = None, lease_schema: str | None = None
    ) -> None:
        self.version = _released(version)
        self.from_version = None if from_version is None else _released(from_version)
        self.lease_schema = lease_schema

    @classmethod
    def install_id_functions(
        cls,
        operations: Operations,
        version: str,
        from_version: str | None = None,
        lease_schema: str | None = None,
    ) -> None:
        """Install (or upgrade to) the idfields SQL functions of ``version``."""
        operations.invoke(cls(version, from_version, lease_schema))

    def reverse(self) -> MigrateOperation:
        if self.from_version is not None:
            return InstallIdFunctionsOp(self.from_version, self.version, self.lease_schema)
        return DropIdFunctionsOp(self.version)


@Operations.register_operation("drop_id_functions")
class DropIdFunctionsOp(MigrateOperation):
    """Drop what SQL ``version`` installed; refused while a column default still calls it."""

    def __init__(self, version: str) -> None:
        self.version = _released(version)

    @classmethod
    def drop_id_functions(cls, operations: Operations, version: str) -> None:
        """Drop the idfields SQL functions of ``version`` (and schema ``idfields``)."""
        operations.invoke(cls(version))

    def reverse(self) -> InstallIdFunctionsOp:
        return InstallIdFunctionsOp(self.version)


class _LayoutFunctionsOp(MigrateOperation):
    """A user layout's functions over SQL ``version``; ``layout`` is a :class:`Layout` or its
    ``Layout.to_spec()`` dict (write the dict into the migration so it replays the same way),
    ``sha256`` the digest of the SQL it installs (``idfields.sql.layouts.sql_digest``): anything
    else rendered later is refused."""

    def __init__(self, layout: LayoutLike, version: str, sha256: str | None = None) -> None:
        self.layout = as_layout(layout)
        self.version = version
        self.sha256 = sha256
        self.create_sql, self.drop_sql = render_layout_function(self.layout, version)
        check_digest(self.layout, version, self.create_sql, sha256)


@Operations.register_operation("install_layout_functions")
class InstallLayoutFunctionsOp(_LayoutFunctionsOp):
    """Install ``idfields.next_<name>()`` and ``next_<name>_at(bigint)`` of a user layout."""

    @classmethod
    def install_layout_functions(
        cls, operations: Operations, layout: LayoutLike, version: str, sha256: str | None = None
    ) -> None:
        """Install the ID functions of ``layout`` over the idfields SQL of ``version``."""
        operations.invoke(cls(layout, version, sha256))

    def reverse(self) -> DropLayoutFunctionsOp:
        return DropLayoutFunctionsOp(self.layout, self.version, self.sha256)


@Operations.register_operation("drop_layout_functions")
class DropLayoutFunctionsOp(_LayoutFunctionsOp):
    """Drop a user layout's functions; refused while a column default still calls one."""

    @classmethod
    def drop_layout_functions(
        cls, operations: Operations, layout: LayoutLike, version: str, sha256: str | None = None
    ) -> None:
        """Drop the ID functions of ``layout`` (installed over SQL ``version``)."""
        operations.invoke(cls(layout, version, sha256))

    def reverse(self) -> InstallLayoutFunctionsOp:
        return InstallLayoutFunctionsOp(self.layout, self.version, self.sha256)


def _execute(operations: Operations, script: str) -> None:
    context = operations.get_context()
    if context.dialect.name != "postgresql":
        return
    if context.as_sql:
        # Offline: the file verbatim. Compiling it would double its percent signs under the
        # driver's pyformat paramstyle (format('%I') would then read '%%I').
        context.impl.static_output(script.rstrip() + "\n")
        return
    # text() would read ":name" as a bind parameter: escape the colons (casts, strings).
    operations.execute(text(script.replace(":", r"\:")))


def _lease_schema(operations: Operations, operation: InstallIdFunctionsOp) -> str:
    if operation.lease_schema is not None:
        return operation.lease_schema
    if operations.get_context().as_sql:
        raise ValueError(
            f"idfields: offline (--sql) install of SQL {operation.version} cannot look up the "
            f"idfields tables' schema; pass lease_schema='<schema>' to op.install_id_functions"
        )
    rows = operations.get_bind().exec_driver_sql(sql.FIND_LEASE_SCHEMAS).fetchall()
    return sql.lease_schema_from([row[0] for row in rows])


@Operations.implementation_for(InstallIdFunctionsOp)
def _install(operations: Operations, operation: InstallIdFunctionsOp) -> None:
    if operations.get_context().dialect.name != "postgresql":
        return
    if not sql.needs_lease_schema(operation.version):
        script = sql.load(operation.version)
    else:
        script = sql.load(operation.version, _lease_schema(operations, operation))
    if operation.from_version is not None:
        script += sql.load_leftovers(operation.from_version, operation.version)
    _execute(operations, script)


@Operations.implementation_for(DropIdFunctionsOp)
def _drop(operations: Operations, operation: DropIdFunctionsOp) -> None:
    _execute(operations, sql.load_drop(operation.version))


@Operations.implementation_for(InstallLayoutFunctionsOp)
def _install_layout(operations: Operations, operation: InstallLayoutFunctionsOp) -> None:
    _execute(operations, operation.create_sql)


@Operations.implementation_for(DropLayoutFunctionsOp)
def _drop_layout(operations: Operations, operation: DropLayoutFunctionsOp) -> None:
    _execute(operations, operation.drop_sql)
