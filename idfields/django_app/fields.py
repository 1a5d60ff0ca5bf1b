"""Model fields holding k-sorted IDs, assigned in Python before the INSERT (or by PostgreSQL).

Two families, both ``bigint`` columns (foreign keys to them are ``bigint`` too):

- ``*AutoField``: primary keys and ``DEFAULT_AUTO_FIELD`` drop-ins. They subclass
  ``BigAutoField`` (Django accepts nothing else as DEFAULT_AUTO_FIELD), yet their column is a
  plain ``bigint`` that the database never fills (see ``left_to_the_database`` for the two
  tables where it does), and every row Django saves through them carries its ID:
  ``get_pk_value_on_save`` hands Django the next ID, so ``save()``,
  ``create()``, ``bulk_create()`` (on every backend, with or without RETURNING),
  ``get_or_create()``, parents of multi-table inheritance and M2M through rows all know their
  pk before the INSERT, and no RETURNING clause is needed. While the pk is one we made for the
  instance being saved (named by the ``pre_save`` signal), ``has_default()`` tells Django's
  ``_save_table`` so and it skips the UPDATE it otherwise tries first: saving a new object is
  exactly one query, and so is a retry after a save that failed before its row was written. A
  pk the caller set is BigAutoField's case: UPDATE first, INSERT if no row matched
  (``Place(pk=existing.pk).save()``, ``Restaurant(place_ptr=place).save()``).
- ``*IdField``: any other column (or an explicit ``primary_key=True``); a blank value is filled
  in ``pre_save`` on insert, so forms may leave it empty.

``layout=`` names a built-in layout or one of ``IDFIELDS["LAYOUTS"]``; ``KSortedAutoField`` and
``KSortedIdField`` without it follow ``IDFIELDS["LAYOUT"]``. Names are resolved at first use,
never frozen into migrations: changing the settings leaves ``makemigrations`` quiet.

``generation="db"`` lets PostgreSQL fill the column (``DEFAULT idfields.next_snowflake()`` and
kin, installed by the SQL migrations, or a user layout's ``next_<name>()`` installed by
``InstallLayoutFunctions``; :mod:`idfields.sql.catalog` names them); the pk then comes back
through RETURNING.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from django import forms
from django.apps import apps
from django.core import checks
from django.core.exceptions import FieldDoesNotExist, FieldError
from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BigAutoField, BigIntegerField, Field, ForeignObject, Func, Model

from idfields._generation import database_functions
from idfields.django_app import sources
from idfields.django_app.conf import get_settings
from idfields.errors import GeneratorClosed, IdFieldsError, WrongArgumentType
from idfields.layouts import MAX_ID, Layout
from idfields.sql.catalog import functions_of

APP = "app"
DB = "db"

__all__ = [
    "DecimalIdAutoField",
    "DecimalIdField",
    "KSortedAutoField",
    "KSortedIdField",
    "NextId",
    "SnowflakeAutoField",
    "SnowflakeField",
    "TraceIdAutoField",
    "TraceIdField",
]


# Django's migration log (django_migrations) takes its pk field from DEFAULT_AUTO_FIELD. It keeps
# an auto-increment key, as BigAutoField would give it: the log exists before the idfields
# tables (which node leases need), and a project switched to idfields has an int4 log key
# (AutoField) that our IDs would overflow half-way through `migrate`.
MIGRATION_LOG_MODULE = "django.db.migrations.recorder"


def _keyed_by_django_at_run_time(model: type[Model]) -> bool:
    """Whether ``model``'s table is, at run time, a link table keyed by Django's own auto field.

    Asked of the link models of the migration state: it has no AppConfig, so they take
    ``DEFAULT_AUTO_FIELD``, while at run time the app's ``default_auto_field`` keys them
    (contrib.auth pins ``AutoField``) and Django inserts their rows without an id. The run-time
    twin is the global registry's link model of the same table.
    """
    opts = model._meta
    if opts.apps is apps or not opts.auto_created or not apps.ready:
        return False  # a run-time model (or one made before any is known): its key is ours
    try:
        config = apps.get_app_config(opts.app_label)
    except LookupError:
        return False  # an app no longer installed: nothing inserts there at run time
    return any(
        twin._meta.auto_created
        and twin._meta.db_table == opts.db_table
        and not isinstance(twin._meta.pk, KSortedFieldMixin)
        for twin in config.get_models(include_auto_created=True)
    )


_ST = TypeVar("_ST", contravariant=True)  # what the attribute takes (django-stubs' order)
_GT = TypeVar("_GT", covariant=True)  # what it gives: int, or int | None with null=True

if TYPE_CHECKING:
    _BigIntegerField = BigIntegerField
    _BigAutoField = BigAutoField
else:
    # django-stubs types a field by its (set, get) type arguments, which Django's classes do not
    # take at run time: these bases take them, so ``SnowflakeField[int, int]`` runs as it checks.
    class _BigIntegerField(BigIntegerField, Generic[_ST, _GT]):
        pass

    class _BigAutoField(BigAutoField, Generic[_ST, _GT]):
        pass


GENERATED_PK = "idfields_generated_pk"  # ModelState key: the pk we made, not inserted yet
_saving = threading.local()  # .instance: a weak reference to the instance this thread saves


def note_save(*, instance: Model, **kwargs: Any) -> None:
    """``pre_save`` receiver: the instance whose ``_save_table`` may ask ``has_default()``."""
    _saving.instance = weakref.ref(instance)


def _instance_being_saved() -> Model | None:
    ref = getattr(_saving, "instance", None)
    return ref() if ref is not None else None


def note_saved(*, instance: Model, **kwargs: Any) -> None:
    """``post_save`` receiver: the ID we made is the row's now, no longer a new object's."""
    vars(instance._state).pop(GENERATED_PK, None)
    _saving.instance = None


class NextId(Func):
    """``idfields.next_<layout>()``: the column default of ``generation="db"`` fields."""

    allowed_default = True
    template = "%(function)s()"
    arity = 0

    def __init__(self, function: str) -> None:
        super().__init__(function=function, output_field=BigIntegerField())


class IdFormField(forms.IntegerField):
    """An integer form field for IDs, rendered as text.

    ``<input type="number">`` is handled as a float by browsers (spinners and validation round
    values above 2**53), so IDs travel as digit strings and are parsed with ``int()``.
    """

    widget = forms.TextInput

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 0)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(**kwargs)

    def widget_attrs(self, widget: forms.Widget) -> dict[str, Any]:
        # Not IntegerField's min/max/step attributes: they are only meaningful on number inputs.
        return {"inputmode": "numeric", "pattern": "[0-9]*"}


class KSortedFieldMixin:
    """What every ID field shares: the layout reference, the generation mode, the next ID."""

    default_layout: ClassVar[str | None] = None  # None: IDFIELDS["LAYOUT"], read at first use
    attname: str
    primary_key: bool
    model: type[Model]

    left_to_the_database = False

    def __init__(
        self, *args: Any, layout: str | None = None, generation: str = APP, **kwargs: Any
    ) -> None:
        if layout is not None and not isinstance(layout, str):
            raise WrongArgumentType(
                f"layout= takes the name of a layout, not {layout!r}; register a Layout object "
                'under a name in IDFIELDS["LAYOUTS"] and pass that name'
            )
        functions = database_functions(layout or self.default_layout or "", generation)
        for option in ("default", "db_default"):
            if option in kwargs:
                raise WrongArgumentType(
                    f"{type(self).__name__} fills itself; drop {option}= (use generation='db' "
                    "for a database-side default)"
                )
        self.layout_name = layout if layout is not None else self.default_layout
        self.generation = generation
        if functions is not None:
            kwargs["db_default"] = NextId(functions.next)
        super().__init__(*args, **kwargs)

    @property
    def layout(self) -> Layout:
        """The resolved layout (settings are read now, not when the model was defined)."""
        settings = get_settings()
        return settings.resolve_layout(self.layout_name or settings.layout)

    def contribute_to_class(self, cls: type[Model], name: str, private_only: bool = False) -> None:
        super().contribute_to_class(cls, name, private_only=private_only)  # type: ignore[misc]
        # The two keys the database fills, as BigAutoField's: Django inserts their rows without
        # an id (a data migration's link rows too, beside the running app's). Everywhere else we
        # issue every ID, and a column the database also filled would give a row inserted
        # without an id max(id) + 1: the next ID we issue within the same millisecond. Decided
        # when the field first joins a model: the copies a schema editor makes of that model
        # (SQLite's rebuild, into a table "new__<name>") keep the decision with the field.
        if "left_to_the_database" not in vars(self):
            self.left_to_the_database = cls.__module__ == MIGRATION_LOG_MODULE or (
                self.primary_key and _keyed_by_django_at_run_time(cls)
            )

    def next_id(self) -> int:
        """The next ID of this field's layout, from the process's generator."""
        try:
            return self._make_id()
        except GeneratorClosed:  # a settings change closed the one this thread had in hand
            return KSortedFieldMixin._make_id(self)

    # The per-row hot path of save() and bulk_create(): one attribute lookup and the generator.

    def _make_id(self) -> int:
        """The first ID; it binds the generator as the instance attribute ``_make_id``.

        That attribute shadows this method, so later rows skip the settings and the generator
        lookup; ``sources.reset()`` (on a settings change) deletes it, and the next row lands
        here again.
        """
        return sources.next_id(self, "_make_id", self.layout_name or get_settings().layout)

    def __copy__(self) -> Any:
        # Field.__copy__ copies __dict__: a copy must bind its own generator, or reset() would
        # not reach it.
        copied = super().__copy__()  # type: ignore[misc]
        vars(copied).pop("_make_id", None)
        return copied

    def get_pk_value_on_save(self, instance: Model) -> int | None:
        # Called by save() and bulk_create() for a pk that is not set yet.
        if self.generation != APP or self.left_to_the_database:
            return None
        value = self.next_id()
        vars(instance._state)[GENERATED_PK] = value  # has_default() looks for it
        return value

    def has_default(self) -> bool:
        """True while the instance being saved holds a pk we made and no row has yet.

        Django skips its UPDATE-first probe for a new instance whose pk "has a default"; that is
        right for our own IDs (no row can have them yet, even when an earlier attempt failed
        before its INSERT) and wrong for a pk the caller chose. The method takes no instance:
        the ``pre_save`` signal names it (``note_save``). Without that signal (the idfields app
        not installed) the answer is BigAutoField's: one UPDATE more, never an INSERT over an
        existing row.
        """
        instance = _instance_being_saved()
        if not self.primary_key or not isinstance(instance, self.model):
            return False
        marker = vars(instance._state).get(GENERATED_PK)
        return instance._state.adding and marker is getattr(instance, self.attname)

    def get_default(self) -> Any:
        # A new object has no pk until it is saved (has_default() speaks for one save only).
        if self.primary_key and self.generation == APP:
            return None
        return super().get_default()  # type: ignore[misc]

    def pre_save(self, model_instance: Model, add: bool) -> Any:
        if add and model_instance is not _instance_being_saved():  # bulk_create: no post_save
            vars(model_instance._state).pop(GENERATED_PK, None)
        value = getattr(model_instance, self.attname)
        if value is None and add and self.generation == APP:
            value = self.next_id()
            setattr(model_instance, self.attname, value)
        return value

    def get_db_prep_save(self, value: Any, connection: BaseDatabaseWrapper) -> Any:
        # An int is already what every backend binds, bar 0, which the auto fields'
        # validate_autopk_value refuses on MariaDB/MySQL as BigAutoField's does (AUTO_INCREMENT
        # takes 0 as "number this row").
        if type(value) is int and value != 0:
            return value
        return super().get_db_prep_save(value, connection)  # type: ignore[misc]

    @property
    def db_returning(self) -> bool:
        """Only a database-filled column is read back; app-side IDs need no RETURNING."""
        return self.generation == DB or self.left_to_the_database

    def deconstruct(self) -> tuple[str, str, list[Any], dict[str, Any]]:
        name, path, args, kwargs = super().deconstruct()  # type: ignore[misc]
        kwargs.pop("default", None)
        kwargs.pop("db_default", None)
        if self.layout_name != self.default_layout:
            kwargs["layout"] = self.layout_name
        if self.generation != APP:
            kwargs["generation"] = self.generation
        return name, path, args, kwargs

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        return [
            *super().check(**kwargs),  # type: ignore[misc]
            *self._check_layout(),
            *self._check_generation(kwargs.get("databases")),
            *self._check_app_installed(),
        ]

    def _check_app_installed(self) -> list[checks.CheckMessage]:
        """The field runs its checks even when the idfields app is left out of INSTALLED_APPS,
        where nothing else would say why the first ID fails (no lease table)."""
        leased = self.generation == APP and get_settings().node_source == "lease"
        if not leased or apps.is_installed("idfields.django_app"):
            return []
        return [
            checks.Error(
                "'idfields.django_app' is not in INSTALLED_APPS: its migrations make the tables "
                "this field leases its node from (and records launches and counters in)",
                hint="Add 'idfields.django_app' to INSTALLED_APPS, then run "
                "'python manage.py migrate'.",
                obj=self,
                id="idfields.E032",
            )
        ]

    def _check_layout(self) -> list[checks.CheckMessage]:
        try:
            self.layout  # noqa: B018 - resolving is the check
        except (KeyError, TypeError, ImportError, ValueError, IdFieldsError) as error:
            return [
                checks.Error(
                    f"layout {self.layout_name!r} cannot be resolved: {error}",
                    hint='Pass a built-in layout name or one defined in IDFIELDS["LAYOUTS"].',
                    obj=self,
                    id="idfields.E030",
                )
            ]
        return []

    def _check_generation(self, databases: list[str] | None) -> list[checks.CheckMessage]:
        if self.generation != DB:
            return []
        if databases is None:  # plain `check`: every alias the model may live in (no query)
            databases = list(connections)
        try:
            layout = self.layout  # a user layout is only known once settings are read
        except (KeyError, TypeError, ImportError, ValueError, IdFieldsError):
            return []  # idfields.E030 reports it
        try:
            functions_of(layout)
        except IdFieldsError as error:
            return [
                checks.Error(
                    f"generation='db' has no database function for layout "
                    f"{self.layout_name!r}: {error}",
                    hint="Use generation='app', or a layout the database can generate.",
                    obj=self,
                    id="idfields.E035",
                )
            ]
        if not get_settings().database_functions:
            return [
                checks.Error(
                    "generation='db' fills the key with idfields.next_*(), but "
                    "IDFIELDS['DATABASE_FUNCTIONS'] is False: migrations install no such function",
                    hint="Use generation='app', or drop DATABASE_FUNCTIONS (default True).",
                    obj=self,
                    id="idfields.E036",
                )
            ]
        return [
            checks.Error(
                f"generation='db' needs PostgreSQL (idfields.next_* functions), but database "
                f"{alias!r} is {connections[alias].vendor}",
                hint="Use generation='app' (the default) on this database, or route the model "
                "to PostgreSQL.",
                obj=self,
                id="idfields.E031",
            )
            for alias in databases
            if connections[alias].vendor != "postgresql"
            and router.allow_migrate_model(alias, self.model)
        ]


def id_field_of(field: object) -> KSortedFieldMixin | None:
    """The ID field whose values ``field`` holds: itself, or the end of a FK / MTI-link chain.

    None for a relation of several columns (a multi-column ``ForeignObject``): no one field
    holds its values; :func:`id_columns` names its columns one by one.
    """
    while isinstance(field, ForeignObject):
        targets = _targets(field)
        if len(targets) != 1:
            return None
        field = targets[0][1]
    return field if isinstance(field, KSortedFieldMixin) else None


def _targets(relation: ForeignObject[Any, Any]) -> list[tuple[Field[Any, Any], Field[Any, Any]]]:
    """``(local field, remote field)`` pairs of a relation; none while it is unresolved."""
    remote: object = relation.remote_field.model
    if isinstance(remote, str):
        return []  # a lazy reference not resolved yet: Django's own checks report it
    try:
        return list(relation.related_fields)
    except (FieldDoesNotExist, FieldError, ValueError):
        return []  # a to_field/from_field that does not exist: Django's checks say which


def id_columns(model: type[Model]) -> dict[Field[Any, Any], Field[Any, Any]]:
    """Each concrete field of ``model``'s own table that holds idfields IDs -> the field saying
    so: an ID field or foreign key itself, or the multi-column ``ForeignObject`` whose local
    column it is (an ``IntegerField`` behind one stores the IDs as much as a foreign key)."""
    found: dict[Field[Any, Any], Field[Any, Any]] = {}
    for field in model._meta.local_fields:
        if isinstance(field, KSortedFieldMixin):
            found.setdefault(field, field)
        elif isinstance(field, ForeignObject):
            for local, remote in _targets(field):
                if local.concrete and local.model is model and id_field_of(remote) is not None:
                    found.setdefault(local, field)
    return found


class KSortedIdField(KSortedFieldMixin, _BigIntegerField[_ST, _GT]):
    """A bigint column of k-sorted IDs, filled on insert when blank (``layout=`` or settings)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("blank", True)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple[str, str, list[Any], dict[str, Any]]:
        name, path, args, kwargs = super().deconstruct()
        if kwargs.pop("blank", False) is not True:
            kwargs["blank"] = False  # our default is True, Django's is False
        return name, path, args, kwargs

    def formfield(self, **kwargs: Any) -> Any:
        return super().formfield(**{"form_class": IdFormField, **kwargs})


class KSortedAutoField(KSortedFieldMixin, _BigAutoField[_ST, _GT]):  # type: ignore[misc,override]
    """A k-sorted primary key; ``DEFAULT_AUTO_FIELD = "idfields.django_app.fields.X"``."""

    def get_internal_type(self) -> str:
        # BigAutoField's column (identity, AUTO_INCREMENT, SQLite's rowid) where the database
        # fills the key; else "bigint NOT NULL PRIMARY KEY" (generation="db": with DEFAULT
        # idfields.next_*()), which refuses an insert without an id instead of numbering it.
        return "BigAutoField" if self.left_to_the_database else "BigIntegerField"

    def get_default(self) -> Any:
        # The ID is made when the object is saved (or, generation="db", omitted from the INSERT
        # and read back by RETURNING). Called for every Model(...).
        return None


class SnowflakeField(KSortedIdField[_ST, _GT]):
    """Snowflake IDs: 41-bit ms | 10-bit node | 12-bit sequence."""

    default_layout = "snowflake"


class TraceIdField(KSortedIdField[_ST, _GT]):
    """TraceId IDs: 25-bit wrapping seconds | 16-bit node | 22-bit counter."""

    default_layout = "traceid"


class DecimalIdField(KSortedIdField[_ST, _GT]):
    """DecimalId IDs: counter * 10**10 + generator_id * 10**5 + launch_id (readable in decimal)."""

    default_layout = "decimal"


class SnowflakeAutoField(KSortedAutoField[_ST, _GT]):
    """Snowflake primary keys."""

    default_layout = "snowflake"


class TraceIdAutoField(KSortedAutoField[_ST, _GT]):
    """TraceId primary keys."""

    default_layout = "traceid"


class DecimalIdAutoField(KSortedAutoField[_ST, _GT]):
    """DecimalId primary keys."""

    default_layout = "decimal"
