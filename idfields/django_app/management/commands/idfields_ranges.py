"""``manage.py idfields_ranges``: the node range each PostgreSQL alias of ``DATABASES``
records; fails naming the first two aliases whose ranges share nodes."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from idfields.django_app.noderanges import alias_ranges
from idfields.errors import NodeRangeOverlap
from idfields.sql import noderange


class Command(BaseCommand):
    help = (
        "List the node range each PostgreSQL database alias records; fail when two share "
        "nodes (their IDs would collide where their rows meet)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "aliases", nargs="*", metavar="ALIAS", help="these aliases only (default: all)"
        )

    def handle(self, *args: Any, aliases: list[str], **options: Any) -> None:
        unknown = [alias for alias in aliases if alias not in settings.DATABASES]
        if unknown:
            raise CommandError(
                f"no database alias {', '.join(map(repr, unknown))} in DATABASES; name some "
                f"of {', '.join(map(repr, settings.DATABASES))}"
            )
        ranges = alias_ranges(aliases or list(settings.DATABASES))
        for alias, limits in ranges.items():
            fence = f", fenced until {limits.fenced_until_ms} ms" if limits.fenced_until_ms else ""
            self.stdout.write(f"{alias}: {limits}{fence}")
        try:
            noderange.check_disjoint(ranges)
        except NodeRangeOverlap as error:
            raise CommandError(str(error)) from None
        self.stdout.write("No two databases share a node.")
