"""Identifier and literal quoting per dialect: every name in a plan goes through here.

Names come from introspection or from the caller (a table "my table" or ``we"ird`` is legal), so
none is ever pasted into SQL as is: Postgres doubles ``"``, MySQL doubles the backtick, the way
``psycopg.sql.Identifier`` and Django's ``quote_name`` do, without needing a connection.
"""

from __future__ import annotations

from typing import Literal

from idfields.errors import InvalidArgument

# Implementation of the planner: nothing here is API.
__all__: list[str] = []

Dialect = Literal["postgresql", "mysql"]
DIALECTS: tuple[Dialect, ...] = ("postgresql", "mysql")


def check_dialect(dialect: str) -> Dialect:
    """The dialect, or a ValueError naming the supported ones."""
    for known in DIALECTS:
        if dialect == known:
            return known
    raise InvalidArgument(
        f"cannot convert keys on {dialect!r}; supported: {', '.join(DIALECTS)} "
        "(SQLite's INTEGER PRIMARY KEY already holds 64-bit IDs: no conversion needed)"
    )


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name or "\x00" in name:
        raise InvalidArgument(f"invalid SQL identifier {name!r}: give a non-empty name without NUL")
    return name


def ident(dialect: Dialect, name: str) -> str:
    """One quoted identifier."""
    _check_name(name)
    if dialect == "postgresql":
        return '"' + name.replace('"', '""') + '"'
    return "`" + name.replace("`", "``") + "`"


def qualified(dialect: Dialect, schema: str | None, name: str) -> str:
    """``schema.name`` (or ``name``), each part quoted."""
    if schema is None:
        return ident(dialect, name)
    return f"{ident(dialect, schema)}.{ident(dialect, name)}"


def literal(text: str) -> str:
    """A Postgres string literal (standard_conforming_strings, on by default since 9.1)."""
    if "\x00" in text:
        raise InvalidArgument(f"a string literal cannot hold NUL: {text!r}")
    return "'" + text.replace("'", "''") + "'"


def dollar_quoted(body: str) -> str:
    """``$tag$body$tag$`` with a tag that does not occur in the body."""
    tag = "idfields"
    while f"${tag}$" in body:
        tag += "_"
    return f"${tag}${body}${tag}$"
