"""SQLAlchemy 2 models with public IDs, and a pydantic model that sends them."""

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel
from sqlalchemy import BigInteger, ForeignKey, String, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

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


def public_id_of(post: Post) -> str | None:
    return post.public_id


def find(session: Session, text: str) -> Post | None:
    return session.scalars(select(Post).where(Post.public_id == text)).one_or_none()


def created(post: Post) -> datetime | None:
    return creation_time(post) or post.created_at


PostId = Annotated[int, PublicIdText(public_ids(Post))]


class PostOut(BaseModel):
    id: PostId
    reply_to: Id | None


def send(post: Post) -> str:
    return PostOut(id=post.id, reply_to=post.reply_to).model_dump_json()
