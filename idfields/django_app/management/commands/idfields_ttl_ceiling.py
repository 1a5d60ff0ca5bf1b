"""``manage.py idfields_ttl_ceiling [SECONDS]``: show or set the lease ttl ceiling, the longest
lease ttl a claim may use and the least a claim waits after the database may have lost commits."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from idfields.coordination import set_lease_ttl_ceiling
from idfields.coordination._identity import ttl_ceiling_ms
from idfields.django_app.conf import get_settings
from idfields.django_app.sources import coordination_database
from idfields.errors import IdFieldsError


class Command(BaseCommand):
    help = (
        "Show the lease ttl ceiling, or set it to SECONDS: the longest LEASE_TTL a process may "
        "claim with, and the least every claim waits after a crash, failover or restore may have "
        "lost commits (docs/how-to/high-availability.md). Raise it before a deploy with a longer "
        "LEASE_TTL starts."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("seconds", nargs="?", type=float, help="the new ceiling, in seconds")
        parser.add_argument("--database", help="alias holding the idfields tables")

    def handle(
        self, *args: Any, seconds: float | None, database: str | None, **options: Any
    ) -> None:
        coordination = coordination_database(database)
        if seconds is not None:
            try:
                set_lease_ttl_ceiling(coordination, seconds)
            except IdFieldsError as error:
                raise CommandError(str(error)) from error
        ceiling_s = ttl_ceiling_ms(coordination) / 1000
        ttl_s = get_settings().lease_ttl
        self.stdout.write(
            f"lease ttl ceiling: {ceiling_s:g} s (this project's LEASE_TTL: {ttl_s:g} s"
            + (
                ", above it: claims are refused until the ceiling is raised)"
                if ttl_s > ceiling_s
                else ")"
            )
        )
