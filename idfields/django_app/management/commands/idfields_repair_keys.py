"""``manage.py idfields_repair_keys``: let the database fill the keys Django leaves to it."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import DEFAULT_DB_ALIAS

from idfields.django_app.link_keys import repair, unfilled


class Command(BaseCommand):
    help = (
        "Give each table whose rows Django inserts without an id (idfields.E050, e.g. "
        "contrib.auth's auth_user_groups) a key column the database fills, keeping every row."
    )
    requires_system_checks: list[str] = []  # E050 is what it repairs

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS, help="the alias to repair")

    def handle(self, *args: Any, database: str, **options: Any) -> None:
        broken = unfilled(database)
        for model in broken:
            repair(database, model)
            self.stdout.write(f"repaired {model._meta.db_table} ({model._meta.label})")
        if not broken:
            self.stdout.write(f"every key of database {database!r} is filled as Django expects")
