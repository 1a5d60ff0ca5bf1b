"""``manage.py idfields_nodes``: who holds which node, app processes and database backends alike,
and how much room each layout has left."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from idfields.coordination import list_leases
from idfields.coordination._report import holder_table, room_line
from idfields.django_app.conf import get_settings
from idfields.django_app.sources import coordination_database
from idfields.errors import IdFieldsError


class Command(BaseCommand):
    help = (
        "List node leases (layout, node, app or database holder, host, pid, since, until, "
        "state) and each layout's room left."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--layout", help="only this layout (its name in the settings)")
        parser.add_argument("--database", help="alias holding the idfields tables")
        parser.add_argument(
            "--all", action="store_true", dest="released", help="list released leases too"
        )

    def handle(
        self, *args: Any, layout: str | None, database: str | None, released: bool, **options: Any
    ) -> None:
        settings = get_settings()
        names = [layout] if layout else list(dict.fromkeys([settings.layout, *settings.layouts]))
        try:
            layouts = [settings.resolve_layout(name) for name in names]
        except (IdFieldsError, ImportError) as error:
            raise CommandError(str(error)) from error
        db = coordination_database(database)
        leases = list_leases(db, layouts[0].lease_key if layout else None)
        self.stdout.write(holder_table(leases, released=released))
        self.stdout.write("")
        for resolved in layouts:
            try:
                self.stdout.write(room_line(db, resolved, settings.lease_ttl))
            except IdFieldsError as error:
                self.stdout.write(f"{resolved.name}: {error}")
