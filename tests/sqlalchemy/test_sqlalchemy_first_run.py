"""A user's first ten minutes with the SQLAlchemy layer, as the README shows it.

The steps that must work: the first flush (the lease table exists), autogenerate (it leaves
the idfields tables alone), a primary key from ``id_column_core("id")`` in a Core table,
``MappedAsDataclass`` models, and an ``Integer`` foreign key to an ID (named before run time).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.orm import (
    DeclarativeBase,
    Mapped,
    MappedAsDataclass,
    Session,
    mapped_column,
)

from idfields.coordination import LeaseSource
from idfields.errors import NarrowColumnWarning, TablesMissing
from idfields.layouts import get_layout
from idfields.sqlalchemy_ext import (
    SQLAlchemyDatabase,
    add_tables,
    check_metadata,
    configure,
    id_column,
    id_column_core,
)
from idfields.sqlalchemy_ext import metadata as idfields_metadata

TABLES = {"idfields_launch", "idfields_node_lease", "idfields_counter"}


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "idf_first_order"
    id: Mapped[int] = id_column(primary_key=True)
    note: Mapped[str] = mapped_column(sa.String(50), default="")


class DataclassBase(MappedAsDataclass, DeclarativeBase):
    pass


class Ticket(DataclassBase):
    __tablename__ = "idf_first_ticket"
    id: Mapped[int] = id_column(primary_key=True, init=False)
    title: Mapped[str] = mapped_column(sa.String(50))
    ref: Mapped[int] = id_column(primary_key=False, init=False)


@pytest.fixture
def user_engine(engine: sa.Engine) -> Iterator[sa.Engine]:
    """The backend's engine, its tables dropped before and after, leases from the database."""
    for meta in (Base.metadata, DataclassBase.metadata):
        meta.drop_all(engine)
    database = SQLAlchemyDatabase(engine)
    configure(source=LeaseSource(database))
    yield engine
    configure()
    database.dispose()
    for meta in (Base.metadata, DataclassBase.metadata):
        meta.drop_all(engine)


def test_create_all_makes_the_lease_tables_and_the_first_flush_works(
    user_engine: sa.Engine,
) -> None:
    assert set(Base.metadata.tables) >= TABLES
    Base.metadata.create_all(user_engine)
    with Session(user_engine) as session, session.begin():
        order = Order()
        session.add(order)
        session.flush()
        assert get_layout("snowflake").decode(order.id).values["node"] >= 0
        assert order.id > 2**40  # our key, not AUTO_INCREMENT's 1


def test_missing_tables_error_names_the_fix(user_engine: sa.Engine) -> None:
    Order.__table__.create(user_engine)  # type: ignore[attr-defined]
    with Session(user_engine) as session, pytest.raises(TablesMissing) as missing:
        session.add(Order())
        session.flush()  # the key is made before the INSERT: the error is ours, unwrapped
    with user_engine.begin() as conn, pytest.raises(sa.exc.StatementError) as caught:
        conn.execute(sa.insert(Order))  # SQLAlchemy wraps a column default's error
    assert isinstance(caught.value.orig, TablesMissing)
    for message in (str(missing.value), str(caught.value.orig)):
        assert "does not exist" in message and "op.create_idfields_tables()" in message
        assert "create_all" in message


def test_mapped_as_dataclass_models_get_ids(user_engine: sa.Engine) -> None:
    DataclassBase.metadata.create_all(user_engine)
    with Session(user_engine) as session, session.begin():
        ticket = Ticket(title="first")
        session.add(ticket)
        session.flush()
        assert ticket.id > 2**40 and ticket.ref > ticket.id


def test_autogenerate_is_clean_for_the_idfields_tables(user_engine: sa.Engine) -> None:
    """The tables made by ``op.create_idfields_tables()`` (from the package's own metadata) match
    the user's metadata: before, autogenerate wrote ``op.drop_table`` for all three."""
    idfields_metadata.create_all(user_engine)
    Order.__table__.create(user_engine)  # type: ignore[attr-defined]
    with user_engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(context, Base.metadata)
    # Other suites' tables share the server's test database: only ours and idfields' count.
    ours = set(Base.metadata.tables) | TABLES
    assert [d for d in diff if d[0] != "remove_table" or d[1].name in ours] == []


def test_id_columns_are_the_primary_key_unless_told_otherwise() -> None:
    table = sa.Table("idf_core_pk", sa.MetaData(), id_column_core("id"))
    assert list(table.primary_key.columns) == [table.c.id]
    assert id_column().column.primary_key
    assert not id_column(primary_key=False).column.primary_key
    other = sa.Table(
        "idf_core_ref",
        sa.MetaData(),
        sa.Column("pk", sa.Integer, primary_key=True),
        id_column_core("ref", primary_key=False),
    )
    assert list(other.primary_key.columns) == [other.c.pk]
    assert set(table.metadata.tables) >= TABLES


def narrow_metadata() -> sa.MetaData:
    """A parent keyed by an ID column and a child whose Integer foreign key points at it."""
    meta = sa.MetaData()
    sa.Table("idf_parent", meta, id_column_core("id"))
    sa.Table(
        "idf_child",
        meta,
        id_column_core("id"),
        sa.Column("parent_id", sa.Integer, sa.ForeignKey("idf_parent.id")),
        sa.Column("wide_parent_id", sa.BigInteger, sa.ForeignKey("idf_parent.id")),
    )
    return meta


def test_check_metadata_names_integer_foreign_keys_to_an_id() -> None:
    meta = narrow_metadata()
    problems = check_metadata(meta)
    assert len(problems) == 1
    assert problems[0].startswith("idf_child.parent_id is Integer() but references idf_parent.id")
    assert "BigInteger" in problems[0]
    with pytest.warns(NarrowColumnWarning, match="idf_child.parent_id") as caught:
        add_tables(meta)
        add_tables(meta)
        meta.create_all(sa.create_engine("sqlite://"))
    assert len(caught) == 1  # once per column
    with pytest.warns(NarrowColumnWarning, match="idf_child.parent_id"):
        narrow_metadata().create_all(sa.create_engine("sqlite://"))


def test_add_tables_twice_is_harmless() -> None:
    meta = sa.MetaData()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = add_tables(meta)
        assert add_tables(meta) == first


def test_orm_integer_foreign_key_is_named_when_mappers_configure() -> None:
    """An explicit ``Integer`` foreign key to an ID (SQLAlchemy-Utils' 43 failures) is named when
    the ORM configures its mappers; ``Mapped[int]`` with a bare ForeignKey takes the key's
    BIGINT and is fine."""

    class NarrowBase(DeclarativeBase):
        pass

    class Parent(NarrowBase):
        __tablename__ = "idf_narrow_parent"
        id: Mapped[int] = id_column(primary_key=True)

    class Child(NarrowBase):
        __tablename__ = "idf_narrow_child"
        id: Mapped[int] = id_column(primary_key=True)
        parent_id: Mapped[int] = mapped_column(sa.Integer, sa.ForeignKey("idf_narrow_parent.id"))
        other_id: Mapped[int] = mapped_column(sa.ForeignKey("idf_narrow_parent.id"))

    assert [p.split(" is ")[0] for p in check_metadata(NarrowBase.metadata)] == [
        "idf_narrow_child.parent_id"
    ]
    with pytest.warns(NarrowColumnWarning, match="idf_narrow_child.parent_id"):
        sa.orm.configure_mappers()
    NarrowBase.registry.dispose()
