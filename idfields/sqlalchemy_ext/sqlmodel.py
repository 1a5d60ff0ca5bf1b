"""SQLModel fields for k-sorted keys: the primary key, and the foreign keys that hold its IDs.

::

    class Team(SQLModel, table=True):
        id: Id | None = id_field()
        name: str

    class Hero(SQLModel, table=True):
        id: Id | None = id_field()
        team_id: Id | None = id_foreign_key("team.id", default=None)

SQLModel makes an ``int`` field an INTEGER column, 32 bits on PostgreSQL and MariaDB: a foreign
key declared ``int`` overflows at the first insert there (or MariaDB refuses it, errno 150), so
:func:`id_foreign_key` declares it BIGINT. :data:`idfields.pydantic.Id` as the annotation keeps
the value an ``int`` in Python and sends it as a string in JSON (a JavaScript number loses the
last digits of a 63-bit ID), in table models and in the response models built from them alike.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger
from sqlmodel import Field

from idfields._generation import Generation
from idfields.layouts import Layout
from idfields.sqlalchemy_ext._columns import id_column_core

__all__ = ["id_field", "id_foreign_key"]


def id_field(
    *, layout: str | Layout = "snowflake", generation: Generation = "app", **column: Any
) -> Any:
    """The primary key field: ``id: Id | None = id_field()``. It is None until the flush that
    inserts the row gives it its ID (as SQLModel's own ``Field(default=None, primary_key=True)``).

    ``column`` goes to the SQLAlchemy column (:func:`~idfields.sqlalchemy_ext.id_column_core`),
    which SQLModel takes as ``sa_column`` whole: its other ``Field`` options do not apply.
    """
    return Field(
        default=None, sa_column=id_column_core(None, layout=layout, generation=generation, **column)
    )


def id_foreign_key(target: str, **field: Any) -> Any:
    """A foreign key to an ID column, BIGINT: ``team_id: Id | None = id_foreign_key("team.id",
    default=None)``. ``field`` goes to SQLModel's ``Field`` (``default``, ``ondelete``,
    ``primary_key`` for a link model, ``index``...)."""
    return Field(foreign_key=target, sa_type=BigInteger, **field)
