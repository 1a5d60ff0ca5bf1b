"""``op.install_id_functions(version=..., from_version=None)``: the database-side ID functions.

The SQL is the immutable versioned file named by the migration, emitted through
``operations.execute`` so ``alembic upgrade --sql`` prints it. PostgreSQL only.
"""

from __future__ import annotations

from alembic.operations import MigrateOperation, Operations
from sqlalchemy import text

from idfields import sql


@Operations.register_operation("install_id_functions")
class InstallIdFunctionsOp(MigrateOperation):
    """Install SQL ``version``; with ``from_version`` the reverse restores that version."""

    def __init__(self, version: str, from_version: str | None = None, drop: bool = False) -> None:
        for name in (version, from_version):
            if name is not None and name not in sql.available():
                raise ValueError(
                    f"idfields has no SQL version {name!r}; released: {', '.join(sql.available())}"
                )
        self.version = version
        self.from_version = from_version
        self.drop = drop

    @classmethod
    def install_id_functions(
        cls, operations: Operations, version: str, from_version: str | None = None
    ) -> None:
        """Install (or upgrade to) the idfields SQL functions of ``version``."""
        operations.invoke(cls(version, from_version))

    def reverse(self) -> InstallIdFunctionsOp:
        if self.from_version is not None:
            return InstallIdFunctionsOp(self.from_version)
        return InstallIdFunctionsOp(self.version, drop=True)


@Operations.implementation_for(InstallIdFunctionsOp)
def _install(operations: Operations, operation: InstallIdFunctionsOp) -> None:
    if operations.get_context().dialect.name != "postgresql":
        return
    script = sql.load_drop(operation.version) if operation.drop else sql.load(operation.version)
    # text() would read ":name" as a bind parameter; escape colons for the offline renderer.
    operations.execute(text(script.replace(":", r"\:")))
