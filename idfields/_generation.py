"""Who makes a key: the application (``generation="app"``, before the INSERT) or the database
(``generation="db"``, the layout's ``idfields.next_<layout>()`` as the column default).

Django fields, SQLAlchemy columns and the key conversions take the same argument and check it
here, so the choice and its refusals read the same everywhere.
"""

from __future__ import annotations

from typing import Literal

from idfields.errors import IdFieldsError, InvalidArgument
from idfields.layouts import Layout
from idfields.sql.catalog import LayoutFunctions, functions_of

Generation = Literal["app", "db"]
GENERATIONS: tuple[Generation, ...] = ("app", "db")


def database_functions(layout: str | Layout, generation: str) -> LayoutFunctions | None:
    """The database functions that make ``layout``'s keys for ``generation="db"``, None for
    ``generation="app"``; an unknown generation, or a layout the database cannot generate,
    raises ValueError naming the fix."""
    if generation not in GENERATIONS:
        raise InvalidArgument(f"generation={generation!r} is unknown; use 'app' or 'db'")
    if generation == "app":
        return None
    try:
        return functions_of(layout)
    except IdFieldsError as error:
        raise InvalidArgument(f"generation='db': {error}; or use generation='app'") from None
