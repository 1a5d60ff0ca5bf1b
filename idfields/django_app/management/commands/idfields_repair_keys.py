"""``manage.py idfields_repair_keys``: key columns shaped by who numbers their rows."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import DEFAULT_DB_ALIAS

from idfields.django_app.link_keys import mismatched, repair


class Command(BaseCommand):
    help = (
        "Give each key column at odds with who numbers its rows the shape migrate gives it, "
        "keeping every row: an identity (AUTO_INCREMENT, SQLite's rowid) where Django inserts "
        "without an id (idfields.E050, e.g. contrib.auth's auth_user_groups), a plain bigint "
        "where idfields issues the IDs (idfields.E051)."
    )
    requires_system_checks: list[str] = []  # E050 and E051 are what it repairs

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS, help="the alias to repair")

    def handle(self, *args: Any, database: str, **options: Any) -> None:
        found = mismatched(database)
        for mismatch in found:
            repair(database, mismatch)
            opts = mismatch.model._meta
            shape = "the database numbers its rows" if mismatch.by_database else "a plain bigint"
            self.stdout.write(f"repaired {opts.db_table} ({opts.label}): {shape}")
        if not found:
            self.stdout.write(
                f"every key column of database {database!r} matches who numbers its rows"
            )
