"""Column constructors: a BIGINT key whose value is made in Python before the INSERT.

The default is a Python callable taking SQLAlchemy's execution context (so it is called per row
without a wrapper): SQLAlchemy evaluates it inside the statement and every insert path (unit of
work flush, ``insert(Model)`` with a list of dicts through insertmanyvalues, Core ``values()`` and
executemany, AsyncSession) gets its IDs without a round trip. ``server_side=True`` leaves the
value to the database function of the layout (``idfields.next_snowflake()`` on Postgres, or a
user layout's ``next_<name>()``; :mod:`idfields.sql.catalog` names them) and has it fetched back.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Column, text
from sqlalchemy.orm import MappedColumn, mapped_column

from idfields.errors import IdFieldsError
from idfields.layouts import Layout
from idfields.sql.catalog import functions_of
from idfields.sqlalchemy_ext.registry import context_default


def _column_options(layout: str | Layout, server_side: bool, kwargs: dict[str, Any]) -> None:
    """Fill ``kwargs`` with the default and autoincrement options of an ID column."""
    for option in ("default", "server_default", "insert_default"):
        if option in kwargs:
            raise TypeError(
                f"id columns set their own {option}; drop {option}= or use a plain "
                "BigInteger column"
            )
    kwargs.setdefault("autoincrement", False)  # never SERIAL / AUTO_INCREMENT / IDENTITY
    if not server_side:
        kwargs["default"] = context_default(layout)
        return
    try:
        functions = functions_of(layout)
    except IdFieldsError as error:
        raise ValueError(
            f"server_side=True: no database-side generator: {error}; or drop server_side=True"
        ) from None
    kwargs["server_default"] = text(functions.next_call)


def id_column(
    layout: str | Layout = "snowflake", *, server_side: bool = False, **kwargs: Any
) -> MappedColumn[int]:
    """A typed declarative BIGINT column with k-sorted IDs: ``id: Mapped[int] =
    id_column(primary_key=True)``. Other keyword arguments go to ``mapped_column``."""
    _column_options(layout, server_side, kwargs)
    column: MappedColumn[int] = mapped_column(BigInteger, **kwargs)
    return column


def id_column_core(
    name: str = "id",
    layout: str | Layout = "snowflake",
    *,
    server_side: bool = False,
    **kwargs: Any,
) -> Column[int]:
    """The same column for Core ``Table`` definitions: ``Table("t", md, id_column_core(...))``."""
    _column_options(layout, server_side, kwargs)
    return Column(name, BigInteger, **kwargs)
