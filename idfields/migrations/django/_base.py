"""``IdFieldsOperation``: what every idfields Django operation shares.

They change the database only, on the vendors they support and where the router allows it (on
any other they do nothing), and every statement goes through ``schema_editor.execute`` so that
``sqlmigrate`` prints exactly what runs.
"""

from __future__ import annotations

from django.db import router
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState
from django.db.models import Model


class IdFieldsOperation(Operation):
    """A database-only operation; subclasses write ``forwards`` and ``backwards``.

    Both hooks get the project state without this operation (Django's ``from_state`` going
    forwards, ``to_state`` going back): the models as they were before it.
    """

    reduces_to_sql = True
    vendors: tuple[str, ...] = ("postgresql",)

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        """Only the database changes."""

    def forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        raise NotImplementedError

    def backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        raise NotImplementedError

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        self.forwards(app_label, schema_editor, from_state)

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        self.backwards(app_label, schema_editor, to_state)

    def enabled(self) -> bool:
        """Whether the project wants this kind of operation at all (a setting may say no)."""
        return True

    def allowed(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        model: type[Model] | None = None,
    ) -> bool:
        """Whether to act here: enabled, a supported vendor, and the router allows the app (or
        model)."""
        connection = schema_editor.connection
        if not self.enabled() or connection.vendor not in self.vendors:
            return False
        if model is None:
            return router.allow_migrate(connection.alias, app_label)
        return self.allow_migrate_model(connection.alias, model)


def execute(schema_editor: BaseDatabaseSchemaEditor, statement: str) -> None:
    """Run (or, under ``sqlmigrate``, collect) SQL that takes no parameters."""
    schema_editor.execute(statement, params=None)
