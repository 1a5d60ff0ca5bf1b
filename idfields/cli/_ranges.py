"""``idfields ranges URL URL ...``: the node range each PostgreSQL database records, and a
refusal (exit status 2) naming the first two that share nodes, before they issue an ID.

URLs that reach the same database (the same cluster and database name: its hot standbys too)
are listed once; a database without the SQL functions issues on every node.
"""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from idfields._text import table
from idfields.errors import UsageError
from idfields.sql import noderange

HEADERS = ("database", "nodes", "fenced until (unix ms)", "same database as")


def run(args: argparse.Namespace) -> dict[str, Any]:
    entries: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    ranges: dict[str, noderange.NodeRange] = {}
    for url in args.urls:
        identity, limits = _read(url)
        shown = _without_password(url)
        entries.append(
            {
                "database": shown,
                "first_node": limits.first,
                "last_node": limits.last,
                "fenced_until_ms": limits.fenced_until_ms,
                "same_as": seen.get(identity),
            }
        )
        if identity not in seen:
            seen[identity] = shown
            ranges[shown] = limits
    noderange.check_disjoint(ranges)
    return {"databases": entries}


def render(document: dict[str, Any]) -> str:
    rows = [
        (
            entry["database"],
            str(noderange.NodeRange(entry["first_node"], entry["last_node"])),
            str(entry["fenced_until_ms"] or "-"),
            entry["same_as"] or "-",
        )
        for entry in document["databases"]
    ]
    return table(HEADERS, rows, right=frozenset({2})) + "\nNo two databases share a node."


def _read(url: str) -> tuple[str, noderange.NodeRange]:
    if urlsplit(url).scheme not in ("postgresql", "postgres"):
        raise UsageError(
            f"{_without_password(url)!r} is not a PostgreSQL URL; pass "
            "postgresql://user@host:port/database for each database"
        )
    try:
        import psycopg
    except ImportError:
        raise UsageError(
            "idfields ranges needs psycopg: pip install 'idfields[postgres]'"
        ) from None
    try:
        with psycopg.connect(url, connect_timeout=10) as conn:
            identity = conn.execute(noderange.IDENTITY).fetchall()[0][0]
            exists = conn.execute(noderange.EXISTS).fetchall()
            rows = conn.execute(noderange.READ).fetchall() if exists[0][0] else []
    except psycopg.Error as error:
        raise UsageError(
            f"cannot read the node range of {_without_password(url)}: "
            f"{' '.join(str(error).split())}; check the URL and that the server is up"
        ) from None
    return str(identity), noderange.from_rows(exists, rows)


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
