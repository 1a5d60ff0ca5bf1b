"""Column constructors: a BIGINT key whose value is made in Python before the INSERT.

The default is a callable taking SQLAlchemy's execution context, held in an :class:`_IdDefault`
so that SQLAlchemy calls it per row as it is (a compiled callable it cannot inspect would be
wrapped in a ``lambda ctx: fn()``, one more Python call per row). SQLAlchemy evaluates it inside
the statement, so every insert path (``insert(Model)`` with a list of dicts through
insertmanyvalues, Core ``values()`` and executemany, AsyncSession) gets its IDs without a round
trip; a unit of work flush gets them a step earlier, at ``before_flush``
(:mod:`idfields.sqlalchemy_ext._flush`). ``generation="db"`` leaves the value to the database
function of the layout (``idfields.next_snowflake()`` on Postgres, or a user layout's
``next_<name>()``; :mod:`idfields.sql.catalog` names them) and has it fetched back.

Every ID column carries ``info["idfields"]`` (its layout's name), which :func:`check_metadata`
reads, and brings the idfields tables into its table's ``MetaData`` when it is attached: the
node leases live there, so ``create_all()`` and Alembic autogenerate see them with no extra step.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Column, Table, event, text
from sqlalchemy.orm import MappedColumn, mapped_column
from sqlalchemy.sql.schema import CallableColumnDefault

from idfields._generation import Generation, database_functions
from idfields.errors import WrongArgumentType
from idfields.layouts import Layout
from idfields.sqlalchemy_ext import _flush  # noqa: F401  (the ORM fill: its listener, at import)
from idfields.sqlalchemy_ext._registry import context_default
from idfields.sqlalchemy_ext._tables import INFO_KEY, define_tables


class _IdDefault(CallableColumnDefault):
    """The ID default, called by SQLAlchemy with the execution context exactly as given."""

    def __new__(cls, arg: Any, for_update: bool = False) -> _IdDefault:
        return object.__new__(cls)  # ColumnDefault.__new__ would pick its own class

    def _maybe_wrap_callable(self, fn: Any) -> Any:
        return fn  # it takes the context: no wrapper, whatever SQLAlchemy can inspect of it

    def _copy(self) -> _IdDefault:  # declarative mixins and to_metadata() copy their columns
        return _IdDefault(self.arg, for_update=self.for_update)  # arg: never wrapped, see above


def _column_options(
    layout: str | Layout, generation: str, kwargs: dict[str, Any], default_option: str
) -> None:
    """Fill ``kwargs`` with the default, autoincrement and info options of an ID column."""
    for option in ("default", "server_default", "insert_default"):
        if option in kwargs:
            raise WrongArgumentType(
                f"id columns set their own {option}; drop {option}= or use a plain "
                "BigInteger column"
            )
    functions = database_functions(layout, generation)
    name = layout.name if isinstance(layout, Layout) else layout
    kwargs.setdefault("autoincrement", False)  # never SERIAL / AUTO_INCREMENT / IDENTITY
    kwargs["info"] = {**kwargs.get("info", {}), INFO_KEY: name}
    if functions is None:
        kwargs[default_option] = _IdDefault(context_default(layout))
    else:
        kwargs["server_default"] = text(functions.next_call)


def _bring_tables(column: Column[Any]) -> None:
    """Add the idfields tables to the metadata of whatever table ``column`` joins.

    ``propagate``: the copies declarative makes of a mixin's or an abstract base's column, and
    ``Table.to_metadata()``'s, bring them too."""

    @event.listens_for(column, "after_parent_attach", propagate=True)
    def attached(column: Column[Any], table: Any) -> None:
        if isinstance(table, Table):
            define_tables(table.metadata)


def id_column(
    *,
    layout: str | Layout = "snowflake",
    generation: Generation = "app",
    primary_key: bool = True,
    **kwargs: Any,
) -> MappedColumn[int]:
    """A typed declarative BIGINT column with k-sorted IDs, the primary key unless
    ``primary_key=False``: ``id: Mapped[int] = id_column()``. Other keyword arguments go to
    ``mapped_column``.

    The ID is SQLAlchemy's ``insert_default`` (not ``default``), so ``MappedAsDataclass``
    models work: declare the key ``id_column(init=False)`` there.
    """
    _column_options(layout, generation, kwargs, "insert_default")
    column: MappedColumn[int] = mapped_column(BigInteger, primary_key=primary_key, **kwargs)
    _bring_tables(column.column)
    return column


def id_column_core(
    name: str | None = "id",
    *,
    layout: str | Layout = "snowflake",
    generation: Generation = "app",
    primary_key: bool = True,
    **kwargs: Any,
) -> Column[int]:
    """The same column for Core tables, named as ``Column`` names it:
    ``Table("orders", metadata, id_column_core("id"), ...)``; ``None`` leaves the name to the
    attribute it is assigned to (SQLModel's ``sa_column``, see
    :mod:`idfields.sqlalchemy_ext.sqlmodel`)."""
    _column_options(layout, generation, kwargs, "default")
    column: Column[int] = Column(name, BigInteger, primary_key=primary_key, **kwargs)
    _bring_tables(column)
    return column
