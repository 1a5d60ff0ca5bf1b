"""``check_metadata``: columns that must hold idfields keys but are declared narrower.

An ``Integer`` foreign key pointing at an ``id_column`` key is 32 bits on PostgreSQL and MariaDB
(SQLite's INTEGER happens to be 64): every row inserted after the first ID overflows it, at run
time and far from the model that caused it. This names each such column with the fix, once.
"""

from __future__ import annotations

import warnings
from typing import Any

from sqlalchemy import BigInteger, Column, Integer, MetaData
from sqlalchemy.exc import SQLAlchemyError

from idfields.errors import NarrowColumnWarning

INFO_KEY = "idfields"  # Column.info key of every ID column: the name of its layout


def check_metadata(metadata: MetaData) -> list[str]:
    """One message per column of ``metadata`` that references an ID column but is narrower."""
    problems = []
    for table in metadata.sorted_tables:
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
    for problem in check_metadata(metadata):
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
