"""``check_metadata``: columns that must hold idfields keys but are declared narrower.

An ``Integer`` foreign key pointing at an ``id_column`` key is 32 bits on PostgreSQL and MariaDB
(SQLite's INTEGER happens to be 64): every row inserted after the first ID overflows it, at run
time and far from the model that caused it. This names each such column with the fix.

:func:`watch` runs the check on a ``MetaData`` where its tables are complete: before
``create_all()``, and after the ORM configures its mappers (the first query or flush), which
Alembic-only projects reach too as soon as the application runs. Never while the tables are
being defined: a foreign key may name a table defined later in the module, as SQLAlchemy's own
many-to-many example does, and SQLAlchemy resolves it only when the mappers configure.
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

from sqlalchemy import BigInteger, Column, Integer, MetaData, event
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Mapper

from idfields.errors import NarrowColumnWarning

INFO_KEY = "idfields"  # Column.info key of every ID column: the name of its layout

_watched: weakref.WeakSet[MetaData] = weakref.WeakSet()
_warned: weakref.WeakKeyDictionary[MetaData, set[str]] = weakref.WeakKeyDictionary()


def check_metadata(metadata: MetaData) -> list[str]:
    """One message per column of ``metadata`` that references an ID column but is narrower."""
    problems = []
    for table in metadata.tables.values():  # sorted_tables would resolve every foreign key
        for column in table.columns:
            target = _id_target(column)
            if target is not None and _narrow(column):
                problems.append(
                    f"{table.name}.{column.name} is {column.type!r} but references "
                    f"{target.table.name}.{target.name}, an idfields key (63-bit); declare it "
                    "BigInteger (sa.BigInteger / Mapped[int] = mapped_column(BigInteger, ...))"
                )
    return problems


def warn_narrow_columns(metadata: MetaData) -> None:
    """Warn (:class:`NarrowColumnWarning`) once per column :func:`check_metadata` names."""
    warned = _warned.setdefault(metadata, set())
    for problem in check_metadata(metadata):
        if problem not in warned:
            warned.add(problem)
            warnings.warn(problem, NarrowColumnWarning, stacklevel=3)


def _id_target(column: Column[Any]) -> Column[Any] | None:
    for foreign_key in column.foreign_keys:
        try:
            target = foreign_key.column
        except SQLAlchemyError:  # the referenced table is not defined (yet): nothing to compare
            continue
        if INFO_KEY in target.info:
            return target
    return None


def _narrow(column: Column[Any]) -> bool:
    kind = column.type
    return isinstance(kind, Integer) and not isinstance(kind, BigInteger)


def watch(metadata: MetaData) -> None:
    """Check ``metadata`` before ``create_all()`` and once the ORM's mappers are configured."""
    if metadata not in _watched:
        _watched.add(metadata)
        event.listen(metadata, "before_create", _before_create)


def _before_create(metadata: MetaData, connection: Any, **kw: object) -> None:
    warn_narrow_columns(metadata)


@event.listens_for(Mapper, "after_configured")
def _after_configured() -> None:
    for metadata in list(_watched):
        warn_narrow_columns(metadata)
