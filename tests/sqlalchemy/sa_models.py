"""The mapped model and Core table the SQLAlchemy tests insert into (one metadata for both)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from idfields.sqlalchemy_ext import id_column, id_column_core


class Base(DeclarativeBase):
    pass


class Item(Base):
    __tablename__ = "idf_sa_item"
    id: Mapped[int] = id_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(50))


core_items = sa.Table(
    "idf_sa_core_item",
    Base.metadata,
    id_column_core(),
    sa.Column("name", sa.String(50)),
)
