"""When a row was created, read from its ID: no ``created_at`` column to write or index.

``created_from_id()`` is a model attribute (Django's admin has ``created_from_id`` too)::

    class Post(Base):
        __tablename__ = "posts"
        id: Mapped[int] = id_column(primary_key=True)
        created_at = created_from_id()  # post.created_at: a UTC datetime

It decodes the ID column's layout (``id_column(layout)``, or the column a foreign key points
to), so the time is as precise as the layout's tick. Ordering by the ID is ordering by it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, overload

from sqlalchemy import Column, inspect

from idfields.errors import WrongArgumentType
from idfields.layouts import Layout
from idfields.sqlalchemy_ext._registry import resolve_layout
from idfields.sqlalchemy_ext._tables import INFO_KEY


def creation_time(obj: object, attribute: str = "id") -> datetime | None:
    """When the ID in ``obj.<attribute>`` was made (UTC), or None while it is unset."""
    value = getattr(obj, attribute)
    if value is None:
        return None
    return layout_of(type(obj), attribute).decode(int(value)).time


def layout_of(model: type, attribute: str = "id") -> Layout:
    """The layout of a mapped ID column, or of the ID column a foreign key column points to."""
    column: Any = inspect(model, raiseerr=True).columns.get(attribute)
    name = _layout_name(column) if isinstance(column, Column) else None
    if name is None:
        raise WrongArgumentType(
            f"{model.__name__}.{attribute} is not an idfields ID column (id_column(), "
            "id_column_core(), or a foreign key to one); created_from_id() decodes only those"
        )
    layout = resolve_layout(name)
    if layout.timestamp is None:
        raise WrongArgumentType(f"layout {name!r} of {model.__name__}.{attribute} holds no time")
    return layout


def _layout_name(column: Column[Any]) -> str | None:
    name = column.info.get(INFO_KEY)
    if name is None:
        for key in column.foreign_keys:
            name = key.column.info.get(INFO_KEY)
    return name if isinstance(name, str) else None


class created_from_id:
    """A read-only model attribute: the creation time decoded from ID column ``attribute``."""

    def __init__(self, attribute: str = "id") -> None:
        self.attribute = attribute

    @overload
    def __get__(self, obj: None, owner: type) -> created_from_id: ...
    @overload
    def __get__(self, obj: object, owner: type) -> datetime | None: ...
    def __get__(self, obj: object | None, owner: type) -> created_from_id | datetime | None:
        if obj is None:
            return self
        return creation_time(obj, self.attribute)
