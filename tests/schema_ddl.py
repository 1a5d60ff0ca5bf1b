"""The idfields tables' DDL for test fixtures, compiled from the package's own definitions
(``idfields.sqlalchemy_ext._tables``), so no fixture keeps a hand-typed copy that could drift."""

from __future__ import annotations

from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.schema import CreateTable

from idfields.sqlalchemy_ext._tables import metadata

_DIALECTS = {"postgresql": postgresql.dialect, "mysql": mysql.dialect, "sqlite": sqlite.dialect}


def create_tables(vendor: str, *names: str) -> list[str]:
    """``CREATE TABLE IF NOT EXISTS`` of tables ``names`` (default: all of them) for ``vendor``."""
    dialect = _DIALECTS[vendor]()
    return [
        str(CreateTable(table, if_not_exists=True).compile(dialect=dialect)).strip()
        for table in metadata.sorted_tables
        if not names or table.name in names
    ]
