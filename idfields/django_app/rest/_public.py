"""Public IDs in DRF: serializer fields, links and the view set lookup."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db.models import Model
from rest_framework import serializers
from rest_framework.request import Request

from idfields.codecs import PublicIdError
from idfields.codecs._checked import ALPHABET
from idfields.django_app.public import public_ids_for
from idfields.errors import WrongArgumentType

LOOKUP_URL_KWARG = "public_id"
"""The URL keyword of :class:`PublicIdLookupMixin`, and the one the link fields fill."""


class PublicIdField(serializers.Field):
    """A model's pk as its public string; input strings are decoded back to the pk.

    ``model`` defaults to the serializer's ``Meta.model``.
    """

    def __init__(self, model: type[Model] | None = None, **kwargs: Any) -> None:
        self.model = model
        super().__init__(**kwargs)

    def _model(self) -> type[Model]:
        found = self.model or getattr(getattr(self.parent, "Meta", None), "model", None)
        if found is None:
            raise WrongArgumentType(
                f"{self.field_name}: give PublicIdField(model=...) outside a ModelSerializer"
            )
        return found

    def to_representation(self, value: Any) -> str:
        pk = value.pk if isinstance(value, Model) else value
        return public_ids_for(self._model()).encode(int(pk))

    def to_internal_value(self, data: Any) -> int:
        return decode(self._model(), data)


def decode(model: type[Model], data: Any) -> int:
    """``data`` as the pk of a ``model`` row, or a 400 naming what is wrong with the string."""
    try:
        return public_ids_for(model).decode(data)
    except PublicIdError as error:
        raise serializers.ValidationError(str(error), code="invalid") from None


def target_model(field: serializers.RelatedField) -> type[Model]:
    """The model a related field points at: ``model=``, its queryset's, or the one its source
    names on the serializer's ``Meta.model`` (read-only fields have no queryset)."""
    explicit: type[Model] | None = getattr(field, "model", None)
    if explicit is not None:
        return explicit
    if field.queryset is not None:
        return field.queryset.model  # type: ignore[no-any-return]
    holder = field.parent if isinstance(field.parent, serializers.ManyRelatedField) else field
    model = getattr(getattr(holder.parent, "Meta", None), "model", None)
    try:
        for attribute in holder.source_attrs:
            model = model._meta.get_field(attribute).related_model  # type: ignore[union-attr]
    except (AttributeError, FieldDoesNotExist):
        model = None
    if model is None:
        raise WrongArgumentType(
            f"{holder.field_name}: give {type(field).__name__}(model=...), or a queryset, where "
            "the serializer's Meta.model does not name the related model"
        )
    return model  # type: ignore[no-any-return]


class PublicIdRelatedField(serializers.PrimaryKeyRelatedField):
    """A foreign key as the public string of the row it points at (``read_only=True`` too)."""

    def __init__(self, model: type[Model] | None = None, **kwargs: Any) -> None:
        self.model = model
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> str:
        return public_ids_for(target_model(self)).encode(int(value.pk))

    def to_internal_value(self, data: Any) -> Model:
        return super().to_internal_value(decode(target_model(self), data))  # type: ignore[no-any-return]


class _PublicIdLinks:
    """Links whose URL carries the public ID: ``reverse(view, kwargs={"public_id": ...})``."""

    lookup_field = "pk__public"
    lookup_url_kwarg: str
    reverse: Any

    def __init__(self, *args: Any, model: type[Model] | None = None, **kwargs: Any) -> None:
        self.model = model
        kwargs.setdefault("lookup_url_kwarg", LOOKUP_URL_KWARG)
        super().__init__(*args, **kwargs)

    def get_url(self, obj: Any, view_name: str, request: Request, format: str | None) -> Any:
        if obj.pk is None:  # an unsaved object has no URL
            return None
        model = type(obj) if isinstance(obj, Model) else target_model(self)
        text = public_ids_for(model).encode(int(obj.pk))
        kwargs = {self.lookup_url_kwarg: text}
        return self.reverse(view_name, kwargs=kwargs, request=request, format=format)

    def get_object(self, view_name: str, view_args: Any, view_kwargs: dict[str, Any]) -> Model:
        queryset = self.get_queryset()  # type: ignore[attr-defined]
        return queryset.get(pk=decode(queryset.model, view_kwargs[self.lookup_url_kwarg]))  # type: ignore[no-any-return]


class PublicIdHyperlinkedRelatedField(_PublicIdLinks, serializers.HyperlinkedRelatedField):
    """A foreign key as the URL of the related row's detail view, with its public ID."""

    def use_pk_only_optimization(self) -> bool:
        return True  # the pk is all a link needs; target_model() knows the model


class PublicIdHyperlinkedIdentityField(_PublicIdLinks, serializers.HyperlinkedIdentityField):
    """The row's own URL (``url``), with its public ID."""


class PublicIdHyperlinkedModelSerializer(serializers.HyperlinkedModelSerializer):
    """A ``HyperlinkedModelSerializer`` whose ``url`` and relation links carry public IDs."""

    serializer_url_field = PublicIdHyperlinkedIdentityField
    serializer_related_field = PublicIdHyperlinkedRelatedField


class PublicIdLookupMixin:
    """For a view set: ``/orders/<public id>/`` finds the row; a bad string is a 404."""

    lookup_field = "pk__public"
    lookup_url_kwarg = LOOKUP_URL_KWARG
    lookup_value_regex = f"[{ALPHABET}]+"
