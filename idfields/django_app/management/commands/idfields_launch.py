"""``manage.py idfields_launch --label v1.2.3``: record a deployment, print its launch id."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from idfields.coordination import record_launch
from idfields.django_app.sources import coordination_database
from idfields.errors import IdFieldsError


class Command(BaseCommand):
    help = (
        "Record a launch (one per deployment) for DecimalId and print its id; processes started "
        "afterwards take generator ids within it. Or export it as IDFIELDS_LAUNCH_ID."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--label", required=True, help="what is deployed, e.g. v1.2.3")
        parser.add_argument("--database", help="alias holding the idfields tables")

    def handle(self, *args: Any, label: str, database: str | None, **options: Any) -> None:
        try:
            launch = record_launch(coordination_database(database), label)
        except (IdFieldsError, ValueError) as error:
            raise CommandError(str(error)) from error
        self.stdout.write(
            f"launch {launch} recorded for {label!r}: processes started from now on take their "
            f"DecimalId generator ids within it (or pin it: IDFIELDS_LAUNCH_ID={launch})"
        )
