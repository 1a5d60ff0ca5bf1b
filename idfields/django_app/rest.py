"""Django REST framework fields for public IDs (``pip install idfields[rest]``).

::

    from idfields.django_app.rest import PublicIdField, PublicIdRelatedField

    class OrderSerializer(serializers.ModelSerializer):
        id = PublicIdField(source="pk", read_only=True)
        customer = PublicIdRelatedField(queryset=Customer.objects.all())

        class Meta:
            model = Order
            fields = ["id", "customer", "total"]

    class OrderViewSet(viewsets.ModelViewSet):
        lookup_field = "pk__public"     # /orders/<public id>/; a bad string is a 404
        lookup_url_kwarg = "public_id"
        lookup_value_regex = "[0-9a-z]+"

The JSON carries only public strings; a string that does not decode is a 400 naming the problem
(a typo, a changed case, tampering, another key), never a database query.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Model
from rest_framework import serializers

from idfields.codecs import PublicIdError
from idfields.django_app.public import public_ids_for

__all__ = ["PublicIdField", "PublicIdRelatedField"]


class PublicIdField(serializers.Field):
    """A model's pk as its public string; input strings are decoded back to the pk.

    ``model`` defaults to the serializer's ``Meta.model``.
    """

    def __init__(self, model: type[Model] | None = None, **kwargs: Any) -> None:
        self.model = model
        super().__init__(**kwargs)

    def _model(self) -> type[Model]:
        if self.model is not None:
            return self.model
        meta = getattr(self.parent, "Meta", None)
        model = getattr(meta, "model", None)
        if model is None:
            raise TypeError(
                f"{self.field_name}: give PublicIdField(model=...) outside a ModelSerializer"
            )
        return model  # type: ignore[no-any-return]

    def to_representation(self, value: Any) -> str:
        pk = value.pk if isinstance(value, Model) else value
        return public_ids_for(self._model()).encode(int(pk))

    def to_internal_value(self, data: Any) -> int:
        try:
            return public_ids_for(self._model()).decode(data)
        except PublicIdError as error:
            raise serializers.ValidationError(str(error), code="invalid") from None


class PublicIdRelatedField(serializers.PrimaryKeyRelatedField):
    """A foreign key as the public string of the row it points at."""

    def to_representation(self, value: Any) -> str:
        model = self.get_queryset().model if self.queryset is not None else type(value)
        return public_ids_for(model).encode(int(value.pk))

    def to_internal_value(self, data: Any) -> Model:
        try:
            pk = public_ids_for(self.get_queryset().model).decode(data)
        except PublicIdError as error:
            raise serializers.ValidationError(str(error), code="invalid") from None
        return super().to_internal_value(pk)  # type: ignore[no-any-return]
