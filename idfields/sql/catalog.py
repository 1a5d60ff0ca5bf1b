"""Which database functions make a layout's IDs: the one map every caller reads.

``generation="db"`` (Django fields, SQLAlchemy columns, key conversions) asks here, through
:mod:`idfields._generation`. Built-in layouts have functions of their own
(``InstallIdFunctions``); a user layout has ``idfields.next_<name>()``, ``next_<name>_at(tick)``,
``take_<name>(n)`` and ``decode_<name>(id)`` once ``InstallLayoutFunctions`` installed them,
which it can only for layouts the renderer (:mod:`idfields.sql.layouts`) expresses. These are
the functions a caller names; what they call as the functions' owner (``issue_<name>...``) and
the internal functions are no caller's to name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from idfields.errors import LayoutError
from idfields.layouts import BUILTIN_LAYOUTS, Layout
from idfields.sql.layouts import render_layout_function

# Implementation: nothing here is API.
__all__: list[str] = []

SCHEMA = "idfields"


@dataclass(frozen=True)
class LayoutFunctions:
    """The database functions of one layout, as schema-qualified names (no parentheses)."""

    layout: str
    next: str  # ``next()``: one ID, the column default
    # ``next_at(now_tick bigint)``: the same at a given tick, for tests; revoked from PUBLIC (a
    # grantee needs ``issue_<layout>_at(bigint, regclass)`` too)
    next_at: str | None
    decode: str  # ``decode(id bigint)``: the fields, like Layout.decode
    take: str | None  # ``take(n bigint)``: n IDs as a set, for bulk loads

    @property
    def next_call(self) -> str:
        """``idfields.next_<layout>()``: the SQL expression of a column default."""
        return f"{self.next}()"


def _builtin(layout: str, *, time_based: bool) -> LayoutFunctions:
    return LayoutFunctions(
        layout=layout,
        next=f"{SCHEMA}.next_{layout}",
        next_at=f"{SCHEMA}.next_{layout}_at" if time_based else None,
        decode=f"{SCHEMA}.decode_{layout}",
        take=f"{SCHEMA}.take_{layout}" if time_based else None,
    )


#: The built-in layouts with functions of their own: ``next_<layout>()`` and the rest.
BUILTIN_FUNCTIONS: Mapping[str, LayoutFunctions] = MappingProxyType(
    {
        "snowflake": _builtin("snowflake", time_based=True),
        "traceid": _builtin("traceid", time_based=True),
        "decimal": _builtin("decimal", time_based=False),
    }
)


def _user_functions(name: str) -> LayoutFunctions:
    def quoted(function: str) -> str:  # as the renderer names them: any name stays one identifier
        return f'{SCHEMA}."{function.replace(chr(34), chr(34) * 2)}"'

    return LayoutFunctions(
        layout=name,
        next=quoted(f"next_{name}"),
        next_at=quoted(f"next_{name}_at"),
        decode=quoted(f"decode_{name}"),
        take=quoted(f"take_{name}"),
    )


def functions_of(layout: Layout | str) -> LayoutFunctions:
    """The functions of ``layout``: its built-in ones, or those ``InstallLayoutFunctions``
    installs for it; a layout the database cannot generate raises LayoutError saying why.

    A name that is not a built-in one is taken as a user layout's: callers that resolve the
    layout only later (a Django field reads its settings at first use, not at class definition)
    check the resolved :class:`Layout` again then.
    """
    if isinstance(layout, str) and layout in BUILTIN_LAYOUTS:
        layout = BUILTIN_LAYOUTS[layout]
    if isinstance(layout, str):
        if not layout:
            raise LayoutError(
                "a database-side ID needs a layout name; name the layout "
                f"({', '.join(BUILTIN_FUNCTIONS)}, or a user layout installed by "
                "InstallLayoutFunctions)"
            )
        return _user_functions(layout)
    builtin = BUILTIN_FUNCTIONS.get(layout.name)
    if builtin is not None and BUILTIN_LAYOUTS[layout.name] == layout:
        return builtin
    render_layout_function(layout)  # raises, naming the reason and the fix
    return _user_functions(layout.name)
