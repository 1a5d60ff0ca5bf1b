"""``ConvertToKSortedId``: take over a model's AUTO_INCREMENT primary key with k-sorted IDs.

Every existing row keeps its ID; the key and every column referencing it (M2M through tables
included) become bigint; serial/identity/AUTO_INCREMENT gives way to IDs made in Python
(``generation="app"``) or by ``idfields.next_snowflake()`` (``"db"``, PostgreSQL). The plan comes
from :mod:`idfields.migrations.convert`, read from the live catalog, and every statement goes
through ``schema_editor.execute``, so ``sqlmigrate`` prints exactly what runs, each statement
headed by the lock it takes and whether it rewrites the table (before the table exists there is
no catalog to read: sqlmigrate then prints a comment saying so). Backwards restores
AUTO_INCREMENT with its sequence past max(id). On SQLite, Django's own table rebuild (as
AlterField's) makes the key a plain bigint, every row kept: an INTEGER PRIMARY KEY is the rowid,
which would number a row inserted without an id max(id) + 1, the next ID issued.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import Any, ClassVar

from django.db import transaction
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import ProjectState
from django.db.models import Field, Model

from idfields.errors import InvalidArgument
from idfields.layouts import BUILTIN_LAYOUTS
from idfields.migrations import convert
from idfields.migrations.convert import locks
from idfields.migrations.django._base import IdFieldsOperation, execute

_FIELD_CLASSES = {"snowflake": "SnowflakeAutoField"}


class SchemaEditorExecutor:
    """An online-path executor over a schema editor: ``sqlmigrate`` collects what would run."""

    def __init__(self, schema_editor: BaseDatabaseSchemaEditor) -> None:
        self.schema_editor = schema_editor

    def execute(self, statement: convert.Statement) -> None:
        execute(self.schema_editor, statement.annotated())

    def scalar(self, statement: convert.Statement) -> int:
        if self.schema_editor.collect_sql:
            self.execute(statement)
            return 0
        with self.schema_editor.connection.cursor() as cursor:
            cursor.execute(statement.sql)
            return int(cursor.fetchone()[0])

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction (a savepoint inside the migration's); shown as BEGIN/COMMIT."""
        connection = self.schema_editor.connection
        if not self.schema_editor.collect_sql:
            with transaction.atomic(using=connection.alias):
                yield
        elif connection.in_atomic_block:
            yield
        else:
            execute(self.schema_editor, "BEGIN")
            yield
            execute(self.schema_editor, "COMMIT")


class KeyOperation(IdFieldsOperation):
    """What the in-place and the online operations share: the model's key, read live."""

    # Never wrapped by Django: MySQL cannot run DDL in a transaction, and on Postgres each
    # operation opens the transaction its statements need (see SchemaEditorExecutor).
    atomic = False
    vendors = ("postgresql", "mysql")
    # Where it runs; on the other vendors it refuses (on SQLite it does nothing).
    dialects: tuple[str, ...] = ("postgresql", "mysql")
    # Arguments past model_name: left out of the migration file while they have these values.
    defaults: ClassVar[Mapping[str, object]] = {"lock_timeout": "5s"}
    # The migration's name after the model's: "<model>_<name_suffix>".
    name_suffix: ClassVar[str]

    def __init__(self, model_name: str, lock_timeout: str = "5s") -> None:
        self.model_name = model_name
        self.lock_timeout = lock_timeout
        convert.Target.of("snowflake", lock_timeout=lock_timeout)  # fail at import, not at run

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        kwargs = {
            name: getattr(self, name)
            for name, default in self.defaults.items()
            if getattr(self, name) != default
        }
        return type(self).__name__, [self.model_name], kwargs

    @property
    def migration_name_fragment(self) -> str:
        return f"{self.model_name.lower()}_{self.name_suffix}"

    @contextmanager
    def bounded(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> Iterator[None]:
        """The lock timeout in force before the first statement (introspection included), and
        a timeout naming who holds the lock. Inside the migration's transaction the work runs in
        a savepoint, so that the holders can still be read after a timeout."""
        connection = schema_editor.connection
        if connection.vendor not in ("postgresql", "mysql"):
            yield
            return
        table = state.apps.get_model(app_label, self.model_name)._meta.db_table
        savepoint = (
            transaction.atomic(using=connection.alias)
            if connection.in_atomic_block
            else nullcontext()
        )
        with connection.cursor() as cursor:
            query = convert.cursor_query(cursor)
            with (
                locks.named_blockers(connection.vendor, query, table, None, self.lock_timeout),
                locks.bounded(connection.vendor, query, self.lock_timeout),
                savepoint,
            ):
                yield

    def key(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> convert.KeyInfo | None:
        """The key as the catalog has it now; None where there is nothing to do.

        Under ``sqlmigrate`` a missing table (the migrations before this one not applied yet)
        gives a comment in place of the statements, which are read from the catalog.
        """
        connection = schema_editor.connection
        model: type[Model] = state.apps.get_model(app_label, self.model_name)
        if not self.allowed(app_label, schema_editor, model):
            return None
        if connection.vendor not in self.dialects:
            raise InvalidArgument(
                f"{type(self).__name__} runs on PostgreSQL only, not {connection.vendor}: on "
                "MariaDB/MySQL use ConvertToKSortedId, or an online schema-change tool "
                "(gh-ost, pt-online-schema-change) for the ALTER it prints"
            )
        meta = model._meta
        if meta.pk is None or meta.pk.column is None:
            raise InvalidArgument(f"{meta.label} has no primary key column to convert")
        with connection.cursor() as cursor:
            tables = connection.introspection.table_names(cursor)
            if schema_editor.collect_sql and meta.db_table not in tables:
                execute(
                    schema_editor,
                    f"-- idfields: table {meta.db_table!r} does not exist yet, and the statements "
                    "of this operation are read from its catalog. Apply the migrations before "
                    "this one, then run sqlmigrate again to see them",
                )
                return None
            query = convert.cursor_query(cursor)
            also = [column for column in generic_object_ids() if column[1] in tables]
            return convert.introspect(
                connection.vendor, query, meta.db_table, meta.pk.column, also=also
            )


class ConvertToKSortedId(KeyOperation):
    """Convert ``model_name``'s AUTO_INCREMENT primary key to ``layout`` IDs, reversibly."""

    defaults: ClassVar[Mapping[str, object]] = {
        "layout": "snowflake",
        "generation": "app",
        "lock_timeout": "5s",
    }
    name_suffix = "ksorted_id"

    def __init__(
        self,
        model_name: str,
        layout: str = "snowflake",
        generation: str = "app",
        lock_timeout: str = "5s",
    ) -> None:
        super().__init__(model_name, lock_timeout)
        self.layout = layout
        self.generation = generation
        if layout in BUILTIN_LAYOUTS:  # user layouts resolve from settings when the op runs
            self._target()

    def _target(self) -> convert.Target:
        layout: Any = self.layout
        if layout not in BUILTIN_LAYOUTS:
            from idfields.django_app.conf import get_settings

            layout = get_settings().resolve_layout(layout)
        return convert.Target.of(layout, self.generation, self.lock_timeout)

    def _new_field(self, old: Field[Any, Any]) -> Field[Any, Any]:
        from idfields.django_app import fields

        options: dict[str, Any] = {"primary_key": True, "serialize": False}
        if old.db_column is not None:
            options["db_column"] = old.db_column
        if self.generation != "app":
            options["generation"] = self.generation
        name = _FIELD_CLASSES.get(self.layout)
        if name is not None:
            field: Field[Any, Any] = getattr(fields, name)(**options)
        else:
            field = fields.KSortedAutoField(layout=self.layout, **options)
        return field

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        """The primary key becomes the layout's auto field (references follow it to bigint)."""
        model_state = state.models[app_label, self.model_name.lower()]
        found = next(
            ((name, field) for name, field in model_state.fields.items() if field.primary_key),
            None,
        )
        if found is None:
            raise InvalidArgument(f"{app_label}.{self.model_name} has no primary key to convert")
        name, old = found
        state.alter_field(app_label, self.model_name.lower(), name, self._new_field(old), True)

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        if schema_editor.connection.vendor == "sqlite":
            self._rebuild(app_label, schema_editor, from_state, to_state)
        else:
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        if schema_editor.connection.vendor == "sqlite":
            self._rebuild(app_label, schema_editor, from_state, to_state)
        else:
            super().database_backwards(app_label, schema_editor, from_state, to_state)

    def _rebuild(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        """SQLite: the key from ``from_state``'s field to ``to_state``'s, as AlterField does it
        (a copy of the table and of the tables referencing it, rows kept)."""
        to_model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, to_model):
            return
        if self.generation != "app":
            raise InvalidArgument(
                f"ConvertToKSortedId({self.model_name!r}, generation={self.generation!r}) needs "
                "PostgreSQL (idfields.next_* functions); on SQLite use generation='app'"
            )
        from_model = from_state.apps.get_model(app_label, self.model_name)
        schema_editor.alter_field(from_model, from_model._meta.pk, to_model._meta.pk)

    def forwards_steps(self, key: convert.KeyInfo, target: convert.Target) -> list[convert.Step]:
        return [convert.Step("convert", convert.forwards(key, target))]

    def forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        with self.bounded(app_label, schema_editor, state):
            key = self.key(app_label, schema_editor, state)
            if key is not None:
                run_steps(schema_editor, self.forwards_steps(key, self._target()), key)

    def backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        with self.bounded(app_label, schema_editor, state):
            key = self.key(app_label, schema_editor, state)
            if key is not None:
                step = convert.Step("restore", convert.backwards(key, self._target()))
                run_steps(schema_editor, [step], key)

    def describe(self) -> str:
        return (
            f"Convert {self.model_name}'s AUTO_INCREMENT key to {self.layout} IDs "
            f"(made by the {'database' if self.generation == 'db' else 'application'})"
        )


# A generic object_id of these types holds the key's IDs: widened with it.
_INTEGER_FIELDS = frozenset(
    {
        "IntegerField",
        "PositiveIntegerField",
        "PositiveSmallIntegerField",
        "SmallIntegerField",
        "BigIntegerField",
        "PositiveBigIntegerField",
    }
)


def generic_object_ids(
    app_label: str | None = None, model_name: str | None = None
) -> list[tuple[str | None, str, str]]:
    """``(schema, table, column)`` of each integer generic ``object_id`` (of a
    GenericForeignKey, or reached through a GenericRelation) in every installed model (or an
    app's, or one model's), once per column: any may point at the converted model's content
    type. ``LookupError`` for an app or model that is not installed.

    Read from the installed apps, not the migration state: the state has no private fields.
    """
    from django.apps import apps

    from idfields.django_app.widening import generic_object_ids as object_id_fields

    if app_label is None:
        models = list(apps.get_models())
    elif model_name is None:
        models = list(apps.get_app_config(app_label).get_models())
    else:
        models = [apps.get_model(app_label, model_name)]
    # The table of the model that declares the column: a multi-table child (or a proxy)
    # shares its parent's GenericForeignKey and column.
    found = {
        (None, field.model._meta.db_table, str(field.column)): None
        for field in object_id_fields(models)
        if field.get_internal_type() in _INTEGER_FIELDS
    }
    return list(found)


class WidenObjectId(IdFieldsOperation):
    """Widen the integer generic ``object_id`` of another app (of a GenericForeignKey, or
    reached through a GenericRelation) to bigint, from your own migration, without forking that
    app's migrations: one model (``WidenObjectId("taggit", "TaggedItem")``) or every model of
    the app (``WidenObjectId("taggit")``). Database only: the field keeps its declared class
    (Django already takes it for bigint: :mod:`idfields.django_app.widening`). The system
    checks find it in the migration graph (``widened_columns``), so idfields.W021 clears while
    it is pending and idfields.E020 once the column is bigint. Backwards does nothing: the
    column holds 63-bit IDs by then.
    """

    vendors = ("postgresql", "mysql")
    atomic = False  # MySQL cannot run DDL in a transaction; Postgres runs one of its own

    def __init__(
        self, app_label: str, model_name: str | None = None, lock_timeout: str = "5s"
    ) -> None:
        self.app_label = app_label
        self.model_name = model_name
        self.lock_timeout = lock_timeout
        convert.Target.of("snowflake", lock_timeout=lock_timeout)

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        kwargs = {} if self.lock_timeout == "5s" else {"lock_timeout": self.lock_timeout}
        args = [self.app_label] if self.model_name is None else [self.app_label, self.model_name]
        return type(self).__name__, args, kwargs

    @property
    def _named(self) -> str:
        return self.app_label if self.model_name is None else f"{self.app_label}.{self.model_name}"

    @property
    def migration_name_fragment(self) -> str:
        return f"widen_{self._named.lower().replace('.', '_')}_object_id"

    def describe(self) -> str:
        return f"Widen the GenericForeignKey object_ids of {self._named}"

    def widened_columns(self) -> list[tuple[str | None, str, str]]:
        """``(schema, table, column)`` this operation widens, on every vendor (the system
        checks read them from the migration graph); ``ValueError`` when there is none."""
        try:
            columns = generic_object_ids(self.app_label, self.model_name)
        except LookupError as error:
            raise InvalidArgument(f"WidenObjectId({self._named!r}): {error}") from None
        if not columns:
            raise InvalidArgument(
                f"{self._named} has no integer object_id of a GenericForeignKey or "
                "GenericRelation: check the app label and model name"
            )
        return columns

    def forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        columns = self.widened_columns()  # a wrong name fails on SQLite too, not only later
        if not self.allowed(self.app_label, schema_editor):
            return
        connection = schema_editor.connection
        target = convert.Target.of("snowflake", lock_timeout=self.lock_timeout)
        tables = dict.fromkeys(table for _, table, _ in columns)
        with connection.cursor() as cursor:
            query = convert.cursor_query(cursor)
            for table in tables:  # one table at a time: its lock, and who holds it on timeout
                with (
                    locks.named_blockers(connection.vendor, query, table, None, self.lock_timeout),
                    locks.bounded(connection.vendor, query, self.lock_timeout),
                ):
                    mine = [column for column in columns if column[1] == table]
                    narrow = convert.introspect_also(connection.vendor, query, mine)
                    step = convert.Step("widen", convert.widen(connection.vendor, narrow, target))
                    run_steps(schema_editor, [step], None)

    def backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        """The column stays bigint (it may hold 63-bit IDs)."""


def run_steps(
    schema_editor: BaseDatabaseSchemaEditor,
    steps: list[convert.Step],
    key: convert.KeyInfo | None,
) -> None:
    """Run steps through the schema editor; MySQL's DDL commits by itself (no transaction).
    After a failure the locks are released (and, for a key, its record kept if needed)."""
    executor = SchemaEditorExecutor(schema_editor)
    with convert.recovering(executor, key, schema_editor.connection.vendor):
        for step in steps:
            if schema_editor.connection.vendor == "mysql":
                step = convert.Step(step.name, step.statements, transaction=False)
            convert.online.run_step(executor, step)
