"""A form field for public IDs: users type the public string, the form gets the primary key."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Model

from idfields.codecs import PublicIdError
from idfields.django_app.public import public_ids_for

__all__ = ["PublicIdFormField"]


class PublicIdFormField(forms.CharField):
    """Cleans a public ID of ``model`` to its integer pk; shows a pk (or object) as its string.

    A typo, a changed case, tampering or another key's string is a validation error naming the
    problem; it never reaches the database.
    """

    default_error_messages = {"invalid": "%(reason)s"}

    def __init__(self, model: type[Model], **kwargs: Any) -> None:
        self.model = model
        kwargs.setdefault("strip", True)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, Model):
            value = value.pk
        if isinstance(value, int) and not isinstance(value, bool):
            return public_ids_for(self.model).encode(value)
        return value

    def to_python(self, value: Any) -> int | None:  # type: ignore[override]
        text = super().to_python(value)
        if text is None or text in self.empty_values:
            return None
        try:
            return public_ids_for(self.model).decode(text)
        except PublicIdError as error:
            raise ValidationError(
                self.error_messages["invalid"], code="invalid", params={"reason": str(error)}
            ) from None
