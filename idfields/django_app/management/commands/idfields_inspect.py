"""``manage.py idfields_inspect ID [--layout L] [--json]``: take an ID apart."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from idfields.django_app.conf import get_settings
from idfields.errors import IdFieldsError


class Command(BaseCommand):
    help = "Decode an ID: its fields (time, node, sequence...) and creation time (UTC)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("id", help="the ID, in decimal")
        parser.add_argument("--layout", help="layout name (default: IDFIELDS['LAYOUT'])")
        parser.add_argument("--json", action="store_true", help="print JSON (ID as a string)")

    def handle(self, *args: Any, id: str, layout: str | None, **options: Any) -> None:
        settings = get_settings()
        value = _parse_id(id)
        try:
            decoded = settings.resolve_layout(layout or settings.layout).decode(value)
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


def _parse_id(text: str) -> int:
    """A decimal ID (``_`` separators allowed); anything else is a one-line CommandError."""
    digits = text.strip().replace("_", "")
    if not digits.isdigit() or not digits.isascii():
        raise CommandError(
            f"{text!r} is not an ID: give it in decimal digits, e.g. 384029105134592000 "
            "(base62 strings: `idfields decode` first)"
        )
    return int(digits)
