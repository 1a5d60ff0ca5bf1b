"""``manage.py idfields_nodes``: who holds which node, and how much room each layout has left."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from idfields.coordination import (
    MAX_LAUNCH_ID,
    Database,
    LeaseInfo,
    counter_value,
    current_launch,
    decimal_fields,
    list_leases,
)
from idfields.django_app.conf import get_settings
from idfields.django_app.sources import coordination_database
from idfields.errors import IdFieldsError
from idfields.layouts import Layout

_COLUMNS = ("layout", "node", "holder", "acquired (UTC)", "expires (UTC)", "state")


class Command(BaseCommand):
    help = "List node leases (layout, node, holder, since, until) and each layout's room left."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--layout", help="only this layout's leases")
        parser.add_argument("--database", help="alias holding the idfields tables")

    def handle(self, *args: Any, layout: str | None, database: str | None, **options: Any) -> None:
        db = coordination_database(database)
        leases = list_leases(db, layout)
        self._table([_row(lease) for lease in leases])
        self.stdout.write("")
        settings = get_settings()
        in_table = (lease.layout.partition("#")[0] for lease in leases)  # key: name#fingerprint
        names = dict.fromkeys([settings.layout, *settings.layouts, *in_table])
        for name in names if layout is None else [layout]:
            try:
                resolved = settings.resolve_layout(name)
            except (KeyError, TypeError, ImportError) as error:
                raise CommandError(str(error)) from error
            self.stdout.write(_room(db, resolved, leases))

    def _table(self, rows: list[tuple[str, ...]]) -> None:
        if not rows:
            self.stdout.write("no node leases")
            return
        widths = [max(len(r[i]) for r in [_COLUMNS, *rows]) for i in range(len(_COLUMNS))]
        for row in [_COLUMNS, *rows]:
            self.stdout.write(
                "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            )


def _row(lease: LeaseInfo) -> tuple[str, ...]:
    state = "live" if lease.live else ("released" if not lease.holder else "expired")
    return (
        lease.layout,
        str(lease.node),
        lease.holder or "-",
        f"{lease.acquired_at:%Y-%m-%d %H:%M:%S}",
        f"{lease.expires_at:%Y-%m-%d %H:%M:%S}",
        state,
    )


def _room(db: Database, layout: Layout, leases: list[LeaseInfo]) -> str:
    """Nodes left (time-based) or launch and generator ids left (DecimalId), and the end date."""
    if layout.timestamp is None:
        try:
            generator_field, _ = decimal_fields(layout)
            launch = current_launch(db)
        except IdFieldsError as error:
            return f"{layout.name}: {error}"
        used = counter_value(db, f"generator:{launch}")
        return (
            f"{layout.name}: launch {launch}, {MAX_LAUNCH_ID - launch:,} launch ids left; "
            f"{max(generator_field.size - used, 0):,} of {generator_field.size:,} generator ids "
            f"left in this launch; {layout.runs_out_text}"
        )
    live = sum(1 for lease in leases if lease.layout == layout.lease_key and lease.live)
    return (
        f"{layout.name}: {layout.node_count - live:,} of {layout.node_count:,} nodes free "
        f"({live} leased); timestamps run out: {layout.runs_out_text}"
    )
