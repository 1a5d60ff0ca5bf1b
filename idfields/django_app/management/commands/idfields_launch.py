"""``manage.py idfields_launch --label v1.2.3``: record a deployment, print its launch id."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections
from django.db.models import Field

from idfields.coordination import record_launch
from idfields.coordination._decimal import GENERATOR_FIELD, LAUNCH_FIELD
from idfields.django_app.sources import coordination_database
from idfields.errors import IdFieldsError
from idfields.layouts import Layout


class Command(BaseCommand):
    help = (
        "Record a launch (one per deployment) for DecimalId and print its id; processes started "
        "afterwards take generator ids within it. Or export it as IDFIELDS_LAUNCH_ID."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--label", required=True, help="what is deployed, e.g. v1.2.3")
        parser.add_argument("--database", help="alias holding the idfields tables")
        parser.add_argument(
            "--after",
            type=int,
            default=0,
            help="the highest launch of DecimalIds this database holds that another database "
            "issued (a copy or logical replication without the idfields tables)",
        )

    def handle(
        self, *args: Any, label: str, database: str | None, after: int, **options: Any
    ) -> None:
        coordination = coordination_database(database)
        try:
            launch = record_launch(
                coordination, label, after=after, columns=decimal_columns(coordination.alias)
            )
        except (IdFieldsError, ValueError) as error:
            raise CommandError(str(error)) from error
        self.stdout.write(
            f"launch {launch} recorded for {label!r}: processes started from now on take their "
            f"DecimalId generator ids within it (or pin it: IDFIELDS_LAUNCH_ID={launch})"
        )


def decimal_columns(alias: str) -> list[tuple[str, str]]:
    """(table, column) of every DecimalId field whose table is in database ``alias``: its rows
    show whether the database holds DecimalIds it did not issue."""
    tables = set(connections[alias].introspection.table_names())
    return [
        (model._meta.db_table, str(field.column))
        for model in apps.get_models()
        for field in model._meta.concrete_fields
        if model._meta.db_table in tables and _is_decimal(field)
    ]


def _is_decimal(field: Field[Any, Any]) -> bool:
    """A field of a layout with DecimalId's generator_id and launch_id fields."""
    layout = getattr(field, "layout", None)
    return isinstance(layout, Layout) and {placed.name for placed in layout.node_fields} == {
        GENERATOR_FIELD,
        LAUNCH_FIELD,
    }
