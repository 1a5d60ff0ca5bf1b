"""The node ranges the PostgreSQL databases of ``DATABASES`` record, read per alias for
``manage.py idfields_ranges`` and the ``idfields.W041`` check: two aliases whose ranges share
nodes issue the same IDs, and where their rows meet one is lost.

Aliases reaching one database (the same cluster and database name: a hot standby configured as
a read replica, or a second alias of the primary) count once, under the first alias.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connections

from idfields.sql import noderange

# Implementation: nothing here is API (Django reaches this module through the app).
__all__: list[str] = []


def alias_ranges(aliases: Iterable[str]) -> dict[str, noderange.NodeRange]:
    """The range of each PostgreSQL alias among ``aliases`` (others issue no database-side
    IDs), keyed by alias, each database once."""
    seen: set[str] = set()
    ranges: dict[str, noderange.NodeRange] = {}
    for alias in aliases:
        connection = connections[alias]
        if connection.vendor != "postgresql":
            continue
        with connection.cursor() as cursor:
            cursor.execute(noderange.IDENTITY)
            identity = str(cursor.fetchone()[0])
            cursor.execute(noderange.EXISTS)
            exists = cursor.fetchall()
            rows: list[tuple[object, ...]] = []
            if exists[0][0]:
                cursor.execute(noderange.READ)
                rows = cursor.fetchall()
        if identity not in seen:
            seen.add(identity)
            ranges[alias] = noderange.from_rows(exists, rows)
    return ranges
