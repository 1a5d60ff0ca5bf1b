"""``idfields layouts``: what each built-in layout holds, how fast it issues, how long it lasts."""

from __future__ import annotations

import argparse
from typing import Any

from idfields._text import grouped, table
from idfields.layouts import BUILTIN_LAYOUTS, get_layout

HEADERS = ("layout", "fields", "IDs/s per node", "nodes", "runs out / wraps", "max ID", "JS-safe")


def run(args: argparse.Namespace) -> dict[str, Any]:
    return {"layouts": [layout.to_dict() for layout in BUILTIN_LAYOUTS.values()]}


def render(document: dict[str, Any]) -> str:
    rows = [
        (
            entry["name"],
            " | ".join(
                f"{field['name']}:{field['width']}{'b' if entry['base'] == 2 else 'd'}"
                for field in entry["fields"]
            ),
            grouped(entry["ids_per_second_per_node"]),
            grouped(entry["nodes"]),
            _runs_out(entry),
            grouped(entry["max_id"]),
            "yes" if entry["js_safe"] else "no",
        )
        for entry in document["layouts"]
    ]
    footer = (
        "\nb = bits, d = decimal digits. IDs/s '-': no clock; the node source bounds the rate "
        "(each node value issues its sequence once)."
    )
    return table(HEADERS, rows, right=frozenset({2, 3, 5})) + footer


def _runs_out(entry: dict[str, Any]) -> str:
    """The date alone: the time of day of an end decades away is noise in a table."""
    when = get_layout(entry["name"]).runs_out
    return when.date().isoformat() if when else str(entry["runs_out"])
