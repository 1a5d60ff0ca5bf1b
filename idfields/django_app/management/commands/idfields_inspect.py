"""``manage.py idfields_inspect ID [--model M] [--layout L] [--json]``: take an ID apart."""

from __future__ import annotations

import json
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Model

from idfields.codecs import PublicIdError
from idfields.django_app.conf import get_settings
from idfields.django_app.fields import id_field_of
from idfields.django_app.public import models_with_public_ids, public_ids_for
from idfields.django_app.urls import LENGTH
from idfields.errors import IdFieldsError


class Command(BaseCommand):
    help = "Decode an ID: its fields (time, node, sequence...) and creation time (UTC)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("id", help="the ID, in decimal, or a public ID")
        parser.add_argument(
            "--model", help="app_label.Model of a public ID (when several models show them)"
        )
        parser.add_argument("--layout", help="layout name (default: the key's, or IDFIELDS')")
        parser.add_argument("--json", action="store_true", help="print JSON (ID as a string)")

    def handle(
        self, *args: Any, id: str, model: str | None, layout: str | None, **options: Any
    ) -> None:
        settings = get_settings()
        value, owner = _parse_id(id, model)
        field = id_field_of(owner._meta.pk) if owner is not None else None
        try:
            chosen = settings.resolve_layout(layout or settings.layout)
            decoded = (field.layout if field and not layout else chosen).decode(value)
        except (IdFieldsError, KeyError, TypeError, ImportError, ValueError) as error:
            raise CommandError(str(error).strip("\"'")) from error
        if options["json"]:
            data = decoded.to_dict()
            data["id"] = str(data["id"])  # exact for JavaScript consumers too
            self.stdout.write(json.dumps(data))
            return
        rows = [("id", f"{decoded.id}  (layout {decoded.layout})")]
        rows += [(name, str(field_value)) for name, field_value in decoded.values.items()]
        if decoded.time is not None:
            rows.append(("time", decoded.time.isoformat()))
        width = max(len(name) for name, _ in rows)
        for name, text in rows:
            self.stdout.write(f"{name:<{width}}  {text}")
        if not decoded.in_layout:
            self.stdout.write(
                self.style.WARNING(f"not a valid {decoded.layout} ID: a field is out of range")
            )


def _parse_id(text: str, model: str | None) -> tuple[int, type[Model] | None]:
    """A decimal ID (``_`` separators allowed), or a public ID and the model it belongs to;
    anything else is a one-line CommandError."""
    digits = text.strip().replace("_", "")
    if digits.isdigit() and digits.isascii():
        return int(digits), None
    if model is None and not (len(digits) == LENGTH and digits.isascii() and digits.isalnum()):
        raise CommandError(
            f"{text!r} is not an ID: give it in decimal digits, e.g. 384029105134592000, or a "
            "public ID (base62 strings: `idfields decode` first)"
        )
    owner = _public_id_model(text, model)
    try:
        return public_ids_for(owner).decode(text.strip()), owner
    except PublicIdError as error:
        raise CommandError(f"{error}; or give the ID in decimal digits") from None


def _public_id_model(text: str, model: str | None) -> type[Model]:
    if model is not None:
        try:
            return apps.get_model(model)
        except (LookupError, ValueError) as error:
            raise CommandError(f"--model {model}: {error}") from None
    showing = models_with_public_ids()
    if len(showing) == 1:
        return showing[0]
    if not showing:
        raise CommandError(f"{text!r} is not an ID: no model shows public IDs")
    names = ", ".join(sorted(found._meta.label for found in showing))
    raise CommandError(f"public ID {text!r}: name its model with --model, one of {names}")
