"""JSON for JavaScript clients: IDs as strings, because a JS number loses digits above 2**53-1.

Django's own JSON serializer already keeps every digit (Python's ``json`` writes big ints
exactly); the loss happens in the client's ``JSON.parse``. Two tools:

- This module is a serialization format. Register it in place of ``json`` so ``dumpdata``,
  ``loaddata`` and ``serializers.serialize("json", ...)`` use it::

      SERIALIZATION_MODULES = {"json": "idfields.django_app.serializers"}

  With ``IDFIELDS["IDS_AS_STRINGS"] = True`` (or ``serialize("json", qs, ids_as_strings=True)``)
  every idfields ID column, primary keys and foreign keys / M2M values pointing at one included,
  and the integer ``object_id`` of every GenericForeignKey (it may hold one), is written as a
  string (``"pk": "7212345678901234567"``); other integers stay numbers.
  Loading accepts both forms. Without the option the output is Django's, to the digit.
- :class:`JsSafeJSONEncoder` for hand-built payloads (``JsonResponse(data,
  encoder=JsSafeJSONEncoder)``): it writes any integer beyond JavaScript's safe range as a
  string. It cannot know which values are IDs, so small IDs stay numbers; prefer the serializer
  or a JS-safe layout (``snowflake_js``: IDs below 2**53, so always numbers) for a stable type.
"""

from __future__ import annotations

from typing import Any

from django.core.serializers.json import Deserializer as JsonDeserializer
from django.core.serializers.json import DjangoJSONEncoder
from django.core.serializers.json import Serializer as JsonSerializer
from django.db.models import Field, Model

from idfields.django_app.conf import get_settings
from idfields.django_app.fields import id_field_of
from idfields.layouts import MAX_JS_SAFE_ID

__all__ = ["Deserializer", "JsSafeJSONEncoder", "Serializer"]

Deserializer = JsonDeserializer  # to_python() of ID fields takes digit strings as well


class Serializer(JsonSerializer):
    """Django's JSON serializer; ID values as strings when ``ids_as_strings`` is on."""

    def _init_options(self) -> None:
        self.ids_as_strings = bool(
            self.options.pop("ids_as_strings", get_settings().ids_as_strings)
        )
        super()._init_options()  # type: ignore[misc]

    def _value_from_field(self, obj: Model, field: Field[Any, Any]) -> Any:
        value = super()._value_from_field(obj, field)  # type: ignore[misc]
        if (
            self.ids_as_strings
            and isinstance(value, int)
            and (id_field_of(field) is not None or _is_generic_object_id(field))
        ):
            return str(value)
        return value


def _is_generic_object_id(field: Field[Any, Any]) -> bool:
    """``field`` is the ``fk_field`` (object_id) of a GenericForeignKey of its model.

    One type per field, whatever each row points at: a row may name any model, ours included.
    """
    return any(
        getattr(private, "fk_field", None) == field.name
        and getattr(private, "ct_field", None) is not None
        for private in field.model._meta.private_fields
    )


class JsSafeJSONEncoder(DjangoJSONEncoder):
    """DjangoJSONEncoder writing integers outside +-(2**53-1) as strings."""

    def iterencode(self, o: Any, _one_shot: bool = False) -> Any:
        return super().iterencode(_js_safe(o), _one_shot)


def _js_safe(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value) if abs(value) > MAX_JS_SAFE_ID else value
    if isinstance(value, dict):
        return {key: _js_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_js_safe(item) for item in value]
    return value
