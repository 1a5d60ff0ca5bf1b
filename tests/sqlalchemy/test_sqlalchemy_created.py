"""``created_from_id()``: a model's creation time read from its ID (and from a foreign key to
an ID column), at the layout's precision."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from idfields.sqlalchemy_ext import created_from_id, creation_time, id_column


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "created_author"
    id: Mapped[int] = id_column(primary_key=True)
    created_at = created_from_id()


class Book(Base):
    __tablename__ = "created_book"
    id: Mapped[int] = id_column(layout="traceid", primary_key=True)
    author_id: Mapped[int | None] = mapped_column(sa.ForeignKey("created_author.id"))
    title: Mapped[str] = mapped_column(sa.String(20), default="")
    created_at = created_from_id()
    author_since = created_from_id("author_id")


def test_the_creation_time_is_read_from_the_id(engine: sa.Engine) -> None:
    Base.metadata.create_all(engine)
    try:
        before = datetime.now(UTC)
        with sa.orm.Session(engine) as session:
            author = Author()
            session.add(author)
            session.flush()
            book = Book(author_id=author.id)
            session.add(book)
            session.flush()
        after = datetime.now(UTC)
        assert author.created_at is not None and book.created_at is not None
        assert before - timedelta(milliseconds=1) <= author.created_at <= after
        assert before - timedelta(seconds=1) <= book.created_at <= after  # traceid: seconds
        assert book.author_since == author.created_at
        assert Book().created_at is None
        assert creation_time(book, "author_id") == author.created_at
    finally:
        Base.metadata.drop_all(engine, tables=[Book.__table__, Author.__table__])


def test_a_column_without_an_id_is_refused_with_the_fix() -> None:
    with pytest.raises(TypeError, match="not an idfields ID column"):
        creation_time(Book(title="x"), "title")
