"""A small WSGI app on SQLAlchemy that shows orders and customers only by their public IDs.

``GET /orders/<public id>`` answers the order or 404; ``POST /orders`` takes
``{"customer": "<public id>", "total": 5}`` and answers 201, or 400 naming what is wrong with the
customer's string. No integer key appears in a URL or a JSON body.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from idfields.codecs import PublicIdError
from idfields.sqlalchemy_ext import id_column, public_id_property, public_ids

KEY = "d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2"  # tests only
OLD_KEY = "5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b"


class Base(DeclarativeBase):
    pass


class Customer(Base):
    __tablename__ = "idf_sa_pub_customer"
    id: Mapped[int] = id_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(50))
    public_id = public_id_property(label="shop.customer", keys=[KEY, OLD_KEY])


class Order(Base):
    __tablename__ = "idf_sa_pub_order"
    id: Mapped[int] = id_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(sa.ForeignKey(Customer.id))
    total: Mapped[int] = mapped_column()
    public_id = public_id_property(label="shop.order", keys=[KEY, OLD_KEY])


StartResponse = Callable[[str, list[tuple[str, str]]], Any]


def make_app(engine: sa.Engine) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method, path = environ["REQUEST_METHOD"], environ["PATH_INFO"].strip("/").split("/")
        with Session(engine) as session:
            if method == "GET" and len(path) == 2 and path[0] == "orders":
                order = session.scalars(sa.select(Order).where(Order.public_id == path[1])).first()
                if order is None:
                    return answer(start_response, "404 Not Found", {"detail": "no such order"})
                return answer(start_response, "200 OK", shown(session, order))
            if method == "POST" and path == ["orders"]:
                body = json.loads(environ["wsgi.input"].read())
                try:
                    customer_id = public_ids(Customer).decode(body["customer"])
                except PublicIdError as error:
                    return answer(start_response, "400 Bad Request", {"customer": str(error)})
                if session.get(Customer, customer_id) is None:
                    return answer(
                        start_response, "400 Bad Request", {"customer": "no such customer"}
                    )
                order = Order(customer_id=customer_id, total=body["total"])
                session.add(order)
                session.commit()
                return answer(start_response, "201 Created", shown(session, order))
        return answer(start_response, "404 Not Found", {"detail": "no such page"})

    return app


def shown(session: Session, order: Order) -> dict[str, Any]:
    customer = session.get(Customer, order.customer_id)
    assert customer is not None
    return {"id": order.public_id, "customer": customer.public_id, "total": order.total}


def answer(start_response: StartResponse, status: str, document: dict[str, Any]) -> list[bytes]:
    start_response(status, [("Content-Type", "application/json")])
    return [json.dumps(document).encode()]
