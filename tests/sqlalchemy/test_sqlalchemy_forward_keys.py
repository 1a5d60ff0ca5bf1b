"""Foreign keys that name a table defined later, in SQLAlchemy's own documented orders.

SQLAlchemy resolves such a key when the mappers configure (or ``create_all`` sorts the tables),
so the same models with ``id_column`` keys must import, create and round-trip as they do with
``mapped_column(BigInteger, primary_key=True)``: on all three backends.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

from idfields.errors import NarrowColumnWarning
from idfields.sqlalchemy_ext import id_column, id_column_core

TABLES = {"idfields_launch", "idfields_node_lease", "idfields_counter"}


def _fresh_base() -> type[DeclarativeBase]:
    class Base(DeclarativeBase):
        pass

    return Base


@pytest.fixture
def base(engine: sa.Engine) -> Iterator[type[DeclarativeBase]]:
    """A declarative base of its own; its tables are dropped on ``engine`` after the test."""
    made = _fresh_base()
    yield made
    made.metadata.drop_all(engine)
    made.registry.dispose()


def _keys(engine: sa.Engine, table: str) -> list[str]:
    return [str(fk["referred_table"]) for fk in sa.inspect(engine).get_foreign_keys(table)]


def test_association_table_before_the_classes_it_links(
    engine: sa.Engine, base: type[DeclarativeBase]
) -> None:
    """SQLAlchemy's many-to-many example, in its order: the association ``Table`` comes first."""
    association_table = sa.Table(
        "idf_fwd_association",
        base.metadata,
        sa.Column("left_id", sa.ForeignKey("idf_fwd_left.id"), primary_key=True),
        sa.Column("right_id", sa.ForeignKey("idf_fwd_right.id"), primary_key=True),
    )

    class Parent(base):  # type: ignore[valid-type,misc]
        __tablename__ = "idf_fwd_left"
        id: Mapped[int] = id_column()
        children: Mapped[list[Child]] = relationship(secondary=association_table)

    class Child(base):  # type: ignore[valid-type,misc]
        __tablename__ = "idf_fwd_right"
        id: Mapped[int] = id_column()

    base.metadata.drop_all(engine)
    base.metadata.create_all(engine)
    assert set(sa.inspect(engine).get_table_names()) >= {*TABLES, "idf_fwd_association"}
    assert sorted(_keys(engine, "idf_fwd_association")) == ["idf_fwd_left", "idf_fwd_right"]
    with Session(engine, expire_on_commit=False) as session, session.begin():
        parent = Parent(children=[Child(), Child()])
        session.add(parent)
    with Session(engine) as session:
        loaded = session.get(Parent, parent.id)
        assert loaded is not None
        assert sorted(child.id for child in loaded.children) == sorted(
            child.id for child in parent.children
        )
        assert all(child.id > 2**40 for child in loaded.children)
    column = association_table.c.right_id
    assert isinstance(column.type, sa.BigInteger)  # the key's type, taken when resolved


def test_a_model_whose_foreign_key_names_a_later_model(
    engine: sa.Engine, base: type[DeclarativeBase]
) -> None:
    class Order(base):  # type: ignore[valid-type,misc]
        __tablename__ = "idf_fwd_orders"
        id: Mapped[int] = id_column()
        customer_id: Mapped[int] = mapped_column(sa.ForeignKey("idf_fwd_customers.id"))
        customer: Mapped[Customer] = relationship(back_populates="orders")

    class Product(base):  # type: ignore[valid-type,misc]
        __tablename__ = "idf_fwd_products"
        id: Mapped[int] = id_column()

    class Customer(base):  # type: ignore[valid-type,misc]
        __tablename__ = "idf_fwd_customers"
        id: Mapped[int] = id_column()
        orders: Mapped[list[Order]] = relationship(back_populates="customer")

    base.metadata.drop_all(engine)
    base.metadata.create_all(engine)
    assert _keys(engine, "idf_fwd_orders") == ["idf_fwd_customers"]
    with Session(engine, expire_on_commit=False) as session, session.begin():
        session.add(Product())
        customer = Customer(orders=[Order(), Order()])
        session.add(customer)
    with Session(engine) as session:
        orders = session.scalars(sa.select(Order).order_by(Order.id)).all()
        assert [order.customer_id for order in orders] == [customer.id, customer.id]
        assert [order.id for order in orders] == sorted(order.id for order in customer.orders)


def test_two_models_pointing_at_each_other(engine: sa.Engine, base: type[DeclarativeBase]) -> None:
    """SQLAlchemy's mutually dependent rows (``post_update``), each key naming the other table."""

    class Entry(base):  # type: ignore[valid-type,misc]
        __tablename__ = "idf_fwd_entry"
        id: Mapped[int] = id_column()
        widget_id: Mapped[int | None] = mapped_column(sa.ForeignKey("idf_fwd_widget.id"))

    class Widget(base):  # type: ignore[valid-type,misc]
        __tablename__ = "idf_fwd_widget"
        id: Mapped[int] = id_column()
        favorite_entry_id: Mapped[int | None] = mapped_column(
            sa.ForeignKey("idf_fwd_entry.id", name="idf_fwd_favorite_entry", use_alter=True)
        )
        entries: Mapped[list[Entry]] = relationship(primaryjoin=id == Entry.widget_id)
        favorite_entry: Mapped[Entry | None] = relationship(
            primaryjoin=favorite_entry_id == Entry.id, post_update=True
        )

    base.metadata.drop_all(engine)
    base.metadata.create_all(engine)
    with Session(engine, expire_on_commit=False) as session, session.begin():
        entry = Entry()
        widget = Widget(entries=[entry], favorite_entry=entry)
        session.add(widget)
    with Session(engine) as session:
        loaded = session.get(Widget, widget.id)
        assert loaded is not None
        assert loaded.favorite_entry_id == entry.id
        assert [e.widget_id for e in loaded.entries] == [widget.id]
    assert _keys(engine, "idf_fwd_widget") == ["idf_fwd_entry"]
    assert _keys(engine, "idf_fwd_entry") == ["idf_fwd_widget"]


def test_core_tables_in_either_order(engine: sa.Engine) -> None:
    """Core: a child table whose key names a parent ``Table`` defined after it."""
    meta = sa.MetaData()
    child = sa.Table(
        "idf_fwd_core_child",
        meta,
        sa.Column("parent_id", sa.ForeignKey("idf_fwd_core_parent.id")),
        id_column_core("id"),
    )
    parent = sa.Table("idf_fwd_core_parent", meta, id_column_core("id"))
    meta.drop_all(engine)
    meta.create_all(engine)
    try:
        with engine.begin() as connection:
            connection.execute(parent.insert())
            parent_id = connection.execute(sa.select(parent.c.id)).scalar_one()
            connection.execute(child.insert(), {"parent_id": parent_id})
            assert connection.execute(sa.select(child.c.parent_id)).scalar_one() == parent_id
    finally:
        meta.drop_all(engine)


def test_a_narrow_forward_key_is_named_when_the_mappers_configure() -> None:
    """The narrow-column check waits for the table a forward key names, then names the column."""
    base = _fresh_base()

    class Line(base):  # type: ignore[valid-type,misc]
        __tablename__ = "idf_fwd_narrow_line"
        id: Mapped[int] = id_column()
        invoice_id: Mapped[int] = mapped_column(sa.Integer, sa.ForeignKey("idf_fwd_narrow_inv.id"))

    class Invoice(base):  # type: ignore[valid-type,misc]
        __tablename__ = "idf_fwd_narrow_inv"
        id: Mapped[int] = id_column()

    try:
        with pytest.warns(NarrowColumnWarning, match="idf_fwd_narrow_line.invoice_id"):
            sa.orm.configure_mappers()
    finally:
        base.registry.dispose()
