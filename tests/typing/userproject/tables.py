"""SQLAlchemy 2 models with public IDs, and a pydantic model that sends them."""

from datetime import datetime
from typing import Annotated, assert_type

from pydantic import BaseModel
from sqlalchemy import BigInteger, ForeignKey, String, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.sql.elements import ColumnElement

from idfields.pydantic import Id, PublicIdText
from idfields.sqlalchemy_ext import (
    created_from_id,
    creation_time,
    id_column,
    public_id_property,
    public_ids,
)


class Base(DeclarativeBase):
    pass


class Post(Base):
    __tablename__ = "posts"
    id: Mapped[int] = id_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    reply_to: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("posts.id"))
    created_at = created_from_id()
    public_id = public_id_property(label="blog.post")


def types(post: Post, session: Session, text: str) -> None:
    assert_type(post.id, int)
    assert_type(post.public_id, str | None)
    assert_type(Post.public_id == text, ColumnElement[bool])
    assert_type(
        session.scalars(select(Post).where(Post.public_id == text)).one_or_none(), Post | None
    )


def created(post: Post) -> datetime | None:
    return creation_time(post) or post.created_at


PostId = Annotated[int, PublicIdText(public_ids(Post))]


class PostOut(BaseModel):
    id: PostId
    reply_to: Id | None


def send(post: Post) -> str:
    return PostOut(id=post.id, reply_to=post.reply_to).model_dump_json()
