"""A URL path converter per model: ``<order:pk>`` matches only a public ID and gives the pk.

::

    from django.urls import path, register_converter
    from idfields.django_app.urls import public_id_converter

    register_converter(public_id_converter(Order), "order")
    urlpatterns = [path("orders/<order:pk>/", views.order)]   # view gets the integer pk
    reverse("order", args=[order])                              # an Order, a pk or its string

A string of the right shape that fails to decode (a typo, tampering, another key) does not match,
so Django answers 404 as for any URL that matches no pattern.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Model

from idfields.codecs._checked import ALPHABET, width_for
from idfields.django_app.public import public_ids_for

__all__ = ["public_id_converter"]

LENGTH = width_for(63) + 2  # key id + 13 digits + check: every public ID of a 63-bit key


def public_id_converter(model: type[Model]) -> type:
    """A path converter class for ``model``'s public IDs (register it under any name)."""

    class PublicIdConverter:
        regex = f"[{ALPHABET}]{{{LENGTH}}}"

        def to_python(self, value: str) -> int:
            # PublicIdError is a ValueError: Django's resolver answers it with 404.
            return public_ids_for(model).decode(value)

        def to_url(self, value: Model | int | str) -> str:
            pk: Any = value.pk if isinstance(value, Model) else value
            if isinstance(pk, str):
                public_ids_for(model).decode(pk)  # refuses to build a link that cannot work
                return pk
            return public_ids_for(model).encode(int(pk))

    PublicIdConverter.__qualname__ = f"PublicIdConverter[{model._meta.label}]"
    return PublicIdConverter
