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
        try:
            value = int(id.strip().replace("_", ""))
            decoded = settings.resolve_layout(layout or settings.layout).decode(value)
        except ValueError as error:
            raise CommandError(f"{id!r} is not an integer ID: {error}") from error
        except (IdFieldsError, KeyError, TypeError, ImportError) as error:
            raise CommandError(str(error)) from error
        if options["json"]:
            data = decoded.to_dict()
            data["id"] = str(data["id"])  # exact for JavaScript consumers too
            self.stdout.write(json.dumps(data))
            return
        self.stdout.write(f"id       {decoded.id}  (layout {decoded.layout})")
        for name, field_value in decoded.values.items():
            self.stdout.write(f"{name:<8} {field_value}")
        if decoded.time is not None:
            self.stdout.write(f"time     {decoded.time.isoformat()}")
        if not decoded.in_layout:
            self.stdout.write(
                self.style.WARNING(f"not a valid {decoded.layout} ID: a field is out of range")
            )
