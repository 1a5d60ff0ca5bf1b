"""``manage.py idfields_compare``: the comparison on the project's own database server.

The URL is built from ``DATABASES[alias]`` (PostgreSQL or MySQL/MariaDB; SQLite projects get the
embedded default). It fills and drops its own ``idfields_cmp_*`` tables only.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections

from idfields.compare._cli import add_arguments
from idfields.compare._runner import run_comparison

_SCHEMES = {"postgresql": "postgresql", "mysql": "mysql"}


def database_url(alias: str) -> str | None:
    """The URL of a configured database, None for SQLite (the embedded default)."""
    connection = connections[alias]
    if connection.vendor == "sqlite":
        return None
    scheme = _SCHEMES.get(connection.vendor)
    if scheme is None:
        raise CommandError(
            f"idfields_compare supports PostgreSQL, MySQL/MariaDB and SQLite, "
            f"not {connection.vendor!r}; pass --database-url"
        )
    settings = connection.settings_dict
    auth = quote(settings.get("USER") or "", safe="")
    if settings.get("PASSWORD"):
        auth += ":" + quote(settings["PASSWORD"], safe="")
    host = settings.get("HOST") or "127.0.0.1"
    port = f":{settings['PORT']}" if settings.get("PORT") else ""
    return f"{scheme}://{auth}@{host}{port}/{quote(settings['NAME'], safe='')}"


class Command(BaseCommand):
    help = (
        "Compare AUTO_INCREMENT, k-sorted IDs (app and database side) and UUIDs on this database."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_arguments(parser)
        parser.add_argument("--database", default="default", help="alias to build the URL from")

    def handle(self, *args: Any, **options: Any) -> None:
        url = options["database_url"] or database_url(options["database"])
        try:
            report = run_comparison(
                url,
                options["rows"],
                options["out"],
                progress=not options["no_progress"],
                repeat=options["repeat"],
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        report.print()
        if options["out"]:
            self.stdout.write(f"wrote {options['out']}/compare.json and compare.png")
