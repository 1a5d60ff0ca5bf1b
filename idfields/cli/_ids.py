"""``idfields new`` and ``idfields inspect``: issue IDs of a layout, and take one apart."""

from __future__ import annotations

import argparse
from typing import Any

from idfields import codecs
from idfields._text import pairs, table
from idfields.cli._arguments import count, id_value, node_values
from idfields.errors import NodeNotConfigured, UsageError
from idfields.generators import make_generator
from idfields.layouts import Layout, Node, check_id, get_layout
from idfields.nodes import NodeSource, StaticNode, default_source


def run_new(args: argparse.Namespace) -> dict[str, Any]:
    layout = get_layout(args.layout)
    wanted = count(args.count)
    if layout.timestamp is None and wanted > layout.ids_per_tick:
        # A fixed node issues one block; the next needs a fresh node value from a lease source.
        raise UsageError(
            f"layout {layout.name!r} issues {layout.ids_per_tick:,} IDs per node value; "
            f"pass --count {layout.ids_per_tick:,} or less"
        )
    generator = make_generator(layout, _node_source(layout, args.node))
    try:
        ids = generator.take(wanted)
        node = generator.node
    finally:
        generator.close()
    document: dict[str, Any] = {"layout": layout.name, "node": node, "ids": ids}
    if args.base62:
        document["base62"] = [codecs.encode(value) for value in ids]
    return document


def render_new(document: dict[str, Any]) -> str:
    """One ID per line (pipes well), with its base62 form in a second column if asked for."""
    ids = [str(value) for value in document["ids"]]
    if "base62" not in document:
        return "\n".join(ids)
    return table(("id", "base62"), list(zip(ids, document["base62"], strict=True)), frozenset())


def _node_source(layout: Layout, text: str | None) -> NodeSource:
    """``--node`` when given, else the environment (or development mode); never a silent 0."""
    names = [placed.name for placed in layout.node_fields]
    example = (
        f"--node N ({layout.node_fields[0].minimum}..{layout.node_fields[0].maximum})"
        if len(names) == 1
        else "--node " + ",".join(f"{name}=N" for name in names)
    )
    if text is None:
        try:
            return default_source(layout)
        except NodeNotConfigured:
            env = " and ".join(
                placed.spec.env for placed in layout.node_fields if isinstance(placed.spec, Node)
            )
            raise UsageError(
                f"no node for layout {layout.name!r}: pass {example} or set {env} "
                "(each process needs its own node)"
            ) from None
    values = node_values(text)
    if isinstance(values, dict):
        return StaticNode(**values)
    if len(names) != 1:
        raise UsageError(
            f"layout {layout.name!r} has node fields {', '.join(names)}; name them: {example}"
        )
    return StaticNode(**{names[0]: values})


def run_inspect(args: argparse.Namespace) -> dict[str, Any]:
    layout = get_layout(args.layout)
    value = check_id(codecs.decode(args.id)) if args.base62 else id_value(args.id)
    document = layout.decode(value).to_dict()
    document["base62"] = codecs.encode(value)
    return document


def render_inspect(document: dict[str, Any]) -> str:
    layout = get_layout(document["layout"])
    when = document["time"] or "none: this layout has no timestamp"
    if document["time"] and layout.wraps:
        when += f" (the period nearest now; the timestamp {layout.runs_out_text})"
    in_layout = (
        "yes"
        if document["in_layout"]
        else f"no: a field is outside its range, so this is not a {layout.name} ID"
    )
    rows = [
        ("id", str(document["id"])),
        ("base62", document["base62"]),
        ("layout", layout.name),
        *((name, str(value)) for name, value in document["fields"].items()),
        ("time (UTC)", when),
        ("in layout", in_layout),
    ]
    return pairs(rows)
