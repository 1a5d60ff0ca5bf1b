"""Drive the ``convapp`` test app on one database alias: migrate, models, sqlmigrate, SQL."""

from __future__ import annotations

from typing import Any

Rows = list[tuple[Any, ...]]


class ConvApp:
    """The ``convapp`` test app migrated on one scratch database through its own alias."""

    def __init__(self, alias: str) -> None:
        from django.db import connections

        self.alias = alias
        self.connection = connections[alias]

    def migrate(self, name: str | None, app: str = "convapp") -> None:
        """Migrate ``app`` to migration ``name`` (None: unapply all)."""
        from django.db.migrations.executor import MigrationExecutor

        executor = MigrationExecutor(self.connection)
        executor.migrate([(app, name)])

    def models(self, migration: str) -> Any:
        """The models as they are after ``migration`` (historical models, which save)."""
        from django.db.migrations.loader import MigrationLoader

        state = MigrationLoader(self.connection).project_state(("convapp", migration))
        return lambda name: state.apps.get_model("convapp", name)

    def sqlmigrate(self, name: str, backwards: bool = False) -> str:
        import io

        from django.core.management import call_command

        out = io.StringIO()
        call_command(
            "sqlmigrate", "convapp", name, database=self.alias, backwards=backwards, stdout=out
        )
        return out.getvalue()

    def sql(self, sql: str, *params: Any) -> Rows:
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params or None)
            return [tuple(row) for row in cursor.fetchall()] if cursor.description else []
