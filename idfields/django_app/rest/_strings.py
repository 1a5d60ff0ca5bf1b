"""Integer IDs as JSON strings in DRF when ``IDFIELDS["IDS_AS_STRINGS"]`` is on.

A JavaScript client's ``JSON.parse`` rounds every number above 2**53-1, and a 63-bit key is one:
two rows can arrive under the same number. DRF writes a model's integers as JSON numbers, so a
ModelSerializer with :class:`IdFieldsSerializerMixin` maps idfields ID columns, and foreign keys
to idfields keys, to fields that write strings when the setting is on. Input takes both forms.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from idfields.django_app.conf import get_settings
from idfields.django_app.fields import KSortedFieldMixin, id_field_of
from idfields.django_app.rest._public import target_model


def _shown(value: int) -> int | str:
    return str(value) if get_settings().ids_as_strings else value


class IdField(serializers.IntegerField):
    """An idfields ID column: a string when ``IDS_AS_STRINGS`` is on, else a number."""

    def to_representation(self, value: Any) -> int | str:
        return _shown(super().to_representation(value))


class IdRelatedField(serializers.PrimaryKeyRelatedField):
    """A foreign key by pk; a string when it points at an idfields key and the setting is on."""

    def to_representation(self, value: Any) -> Any:
        pk = super().to_representation(value)
        if isinstance(pk, int) and id_field_of(target_model(self)._meta.pk) is not None:
            return _shown(pk)
        return pk


class IdFieldsSerializerMixin:
    """For a ``ModelSerializer``: its idfields ID columns and foreign keys follow
    ``IDFIELDS["IDS_AS_STRINGS"]`` (``class OrderSerializer(IdFieldsSerializerMixin,
    serializers.ModelSerializer)``)."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        KSortedFieldMixin: IdField,
    }
    serializer_related_field = IdRelatedField
