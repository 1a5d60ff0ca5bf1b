"""Public IDs in Django: the string a model shows in URLs and JSON instead of its primary key.

::

    from idfields.django_app.public import PublicId

    class Order(models.Model):
        public_id = PublicId()          # order.public_id == "k3q7m3x0d9a2hzr"

    Order.objects.get(pk__public="k3q7m3x0d9a2hzr")
    get_object_or_404(Order, pk__public=text)   # a typo, tampering or another key: 404

The strings come from :class:`idfields.codecs.PublicIds` with ``IDFIELDS["PERMUTATION_KEY"]``
(one key or a list, newest first) and a label per model, ``app_label.modelname`` unless
``PublicId(label=...)`` pins one (so a renamed model keeps its URLs). The ``public`` lookup works
on every idfields ID field and answers a string that is not a valid public ID with no rows, as
Django does for an out-of-range integer: decode errors are for forms, serializers and the URL
converter (:mod:`idfields.django_app.urls`), which say what is wrong.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, overload

from django.apps import AppConfig, apps
from django.core.checks import CheckMessage, Error, Tags, register
from django.core.exceptions import EmptyResultSet, ImproperlyConfigured
from django.core.signals import setting_changed
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model
from django.db.models.lookups import Exact
from django.db.models.sql.compiler import SQLCompiler
from django.dispatch import receiver

from idfields.codecs import PublicIdError, PublicIds
from idfields.codecs._keys import KEY_HINT
from idfields.django_app.conf import get_settings
from idfields.django_app.fields import KSortedFieldMixin, id_field_of
from idfields.errors import PermutationKeyError

__all__ = ["PublicId", "PublicIdLookup", "public_ids_for"]

_codecs: dict[tuple[str, str | None], PublicIds] = {}
_lock = threading.Lock()


class PublicId:
    """``obj.<name>``: the object's public ID string (None before it has a pk).

    On the class, ``Model.<name>.encode(pk)`` and ``Model.<name>.decode(text)`` (raising
    :class:`~idfields.codecs.PublicIdError` with the reason) use that model's codec.
    """

    def __init__(self, *, label: str | None = None) -> None:
        self.label = label

    @overload
    def __get__(self, instance: None, owner: type[Model]) -> _Bound: ...
    @overload
    def __get__(self, instance: Model, owner: type[Model]) -> str | None: ...
    def __get__(self, instance: Model | None, owner: type[Model]) -> _Bound | str | None:
        if instance is None:
            return _Bound(owner)
        return None if instance.pk is None else public_ids_for(owner).encode(int(instance.pk))


class _Bound:
    """``Model.public_id``: the model's codec, named after the model."""

    def __init__(self, model: type[Model]) -> None:
        self.model = model

    def encode(self, pk: int) -> str:
        return public_ids_for(self.model).encode(pk)

    def decode(self, text: str) -> int:
        return public_ids_for(self.model).decode(text)


def label_of(model: type[Model]) -> str:
    """The label mixed into ``model``'s key: its ``PublicId(label=...)`` or ``app.model``."""
    found = _public_id_of(model)
    return found.label if found is not None and found.label else model._meta.label_lower


def _public_id_of(model: type[Model]) -> PublicId | None:
    for klass in model.__mro__:
        for value in vars(klass).values():
            if isinstance(value, PublicId):
                return value
    return None


def models_with_public_ids() -> list[type[Model]]:
    """The installed models that show a ``PublicId``."""
    return [model for model in apps.get_models() if _public_id_of(model)]


def public_ids_for(model: type[Model]) -> PublicIds:
    """The codec of ``model`` (built once per settings; a weak key raises, naming the fix)."""
    label = label_of(model)
    field = id_field_of(model._meta.pk)
    layout_name = (field.layout_name or get_settings().layout) if field is not None else None
    codec = _codecs.get((label, layout_name))
    if codec is None:
        with _lock:
            codec = _codecs.setdefault((label, layout_name), _build(label, field))
    return codec


def _build(label: str, field: KSortedFieldMixin | None) -> PublicIds:
    keys = get_settings().permutation_key
    if not keys:
        raise ImproperlyConfigured(f"public IDs need IDFIELDS['PERMUTATION_KEY']; {KEY_HINT}")
    layout = field.layout if field is not None else None
    try:
        return PublicIds(keys, label=label, layout=layout)
    finally:
        del keys  # not in this frame's locals when a weak key raises (Django's debug page)


@receiver(setting_changed)
def _forget(*, setting: str, **kwargs: Any) -> None:
    if setting == "IDFIELDS":
        _codecs.clear()


@register(Tags.security)
def check_permutation_key(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """``idfields.E009``: a weak, short, clashing or comma-joined key; ``idfields.E010``: models
    use ``PublicId`` and no key is set. The key itself is never part of a message.

    The app also refuses to start on these (``IdFieldsConfig.ready``): at run time they would
    fail every public ID, and gunicorn and uwsgi run no system checks."""
    problem = _key_problem()
    if problem is not None:
        return [
            Error(
                problem,
                hint="Public IDs made with a guessable key can be reversed offline, which "
                "reveals row counts and creation times.",
                obj="the IDFIELDS setting",
                id="idfields.E009",
            )
        ]
    if get_settings().permutation_key:
        return []
    users = [model._meta.label for model in models_with_public_ids()]
    if not users:
        return []
    return [
        Error(
            f"{', '.join(users)} show public IDs but IDFIELDS['PERMUTATION_KEY'] is not set.",
            hint=f"Set it from the environment, never from source code; {KEY_HINT}.",
            obj="the IDFIELDS setting",
            id="idfields.E010",
        )
    ]


def _key_problem() -> str | None:
    """What is wrong with ``IDFIELDS["PERMUTATION_KEY"]`` (None when it is good or unset)."""
    keys = get_settings().permutation_key
    if isinstance(keys, str) and "," in keys:
        return (
            "IDFIELDS['PERMUTATION_KEY'] is one string with commas (the 'new,old' form of "
            "the IDFIELDS_PERMUTATION_KEY variable); Django takes a list of keys, newest first: "
            "os.environ['IDFIELDS_PERMUTATION_KEY'].split(',')"
        )
    if not keys:
        return None
    try:
        PublicIds(keys, label="idfields.check")
    except PermutationKeyError as error:
        return (
            f"IDFIELDS['PERMUTATION_KEY']: {error}; several keys (rotation) go in a list, "
            "newest first"
        )
    finally:
        del keys  # not in this frame's locals when a weak key raises (Django's debug page)
    return None


class PublicIdLookup(Exact):
    """``pk__public=text``: the row whose public ID is ``text``; none for an invalid string."""

    lookup_name = "public"
    prepare_rhs = False

    def get_prep_lookup(self) -> Any:
        model = self.lhs.output_field.model
        try:
            self.invalid = False
            return public_ids_for(model).decode(self.rhs)
        except PublicIdError:
            self.invalid = True
            return 0  # never an ID; as_sql answers "no rows" without asking the database

    def get_rhs_op(self, connection: BaseDatabaseWrapper, rhs: str) -> str:
        return connection.operators["exact"] % rhs  # type: ignore[attr-defined,no-any-return]

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, Any]:
        if self.invalid:
            raise EmptyResultSet
        return super().as_sql(compiler, connection)


def _register(base: type) -> None:
    """Register the lookup on every idfields field class (subclasses made later inherit it)."""
    cls: Any
    for cls in base.__subclasses__():
        if hasattr(cls, "register_lookup"):
            cls.register_lookup(PublicIdLookup)
        _register(cls)


_register(KSortedFieldMixin)
