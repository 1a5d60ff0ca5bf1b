"""``manage.py idfields_report``: each layout in use, its capacity, and when it runs out."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from idfields.coordination import MAX_LAUNCH_ID, current_launch, list_leases
from idfields.coordination._report import NodeRoom
from idfields.django_app.checks import layout_names_in_use
from idfields.django_app.conf import get_settings
from idfields.django_app.sources import coordination_database
from idfields.errors import IdFieldsError
from idfields.layouts import MAX_JS_SAFE_ID, Layout


class Command(BaseCommand):
    help = (
        "For every layout the settings and models use: IDs per second per node, nodes, nodes "
        "free (from the lease table), JS safety, and the date its timestamps run out."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--database", help="alias holding the idfields tables")

    def handle(self, *args: Any, database: str | None, **options: Any) -> None:
        state = _coordination(database)
        for layout in _layouts():
            self.stdout.write(f"{layout.name}: {layout.field_summary}")
            for line in _facts(layout, state):
                self.stdout.write(f"  {line}")


def _layouts() -> list[Layout]:
    settings = get_settings()
    try:
        layouts = [settings.resolve_layout(name) for name in layout_names_in_use(settings)]
    except (IdFieldsError, ImportError) as error:
        raise CommandError(f"{error} (manage.py check lists every settings problem)") from error
    return list(dict.fromkeys(layouts))


def _coordination(database: str | None) -> tuple[dict[str, int], int | None] | None:
    """Live leases per layout and the current launch, or None without the idfields tables."""
    db = coordination_database(database)
    try:
        leases = list_leases(db)
    except DatabaseError:
        return None
    counts: dict[str, int] = {}
    for lease in leases:
        counts[lease.layout] = counts.get(lease.layout, 0) + lease.live
    try:
        launch: int | None = current_launch(db)
    except IdFieldsError:
        launch = None
    return counts, launch


def _facts(layout: Layout, state: tuple[dict[str, int], int | None] | None) -> list[str]:
    per_second = layout.ids_per_second
    facts = [
        f"capacity: {per_second:,} IDs/s per node" if per_second else "capacity: counter-based",
        f"nodes: {layout.node_count:,}",
    ]
    if state is None:
        facts.append("nodes free: unknown (no idfields tables; run migrate)")
    elif layout.timestamp is not None:
        room = NodeRoom(layout, state[0].get(layout.lease_key, 0))
        ttl = get_settings().lease_ttl
        facts.append(f"nodes free: {room.free:,}")
        facts.append(
            f"restarts absorbed: {room.restarts_absorbed(ttl):,.1f}/s from other hosts (a dead "
            f"holder's node lapses {ttl:g} s after its last renewal, a second earlier when a "
            "restart in its own PID and time namespace proves it dead)"
        )
    elif state[1] is not None:
        facts.append(f"launch {state[1]}: {MAX_LAUNCH_ID - state[1]:,} launch ids left")
    facts.append("JS-safe" if layout.max_id <= MAX_JS_SAFE_ID else "not JS-safe (> 2**53-1)")
    end = layout.runs_out
    if end is not None:
        years = (end - datetime.now(UTC)).days / 365.25
        facts.append(f"runs out: {end:%Y-%m-%d} ({years:,.1f} years left)")
    else:
        facts.append(f"runs out: {layout.runs_out_text}")
    return facts
