"""The SQLAlchemy app of ``public_app.py`` on each backend: public IDs only in URLs and JSON, rows
found by them, and typos, tampering and other keys' strings answered with 404 or 400."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from idfields.codecs import PublicIds, _checked
from idfields.sqlalchemy_ext import public_ids
from tests.sqlalchemy.public_app import KEY, OLD_KEY, Base, Customer, Order, make_app

OTHER_KEY = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"


@pytest.fixture
def app(engine: sa.Engine) -> Iterator[Any]:
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    yield make_app(engine)
    Base.metadata.drop_all(engine)


def call(app: Any, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else b""
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "wsgi.input": io.BytesIO(data)}
    statuses: list[str] = []
    chunks = app(environ, lambda status, headers: statuses.append(status))
    return int(statuses[0].split()[0]), json.loads(b"".join(chunks))


def customer(engine: sa.Engine) -> Customer:
    with Session(engine, expire_on_commit=False) as session:
        made = Customer(name="c")
        session.add(made)
        session.commit()
        return made


def bad_strings(text: str, pk: int, label: str) -> dict[str, str]:
    position = 6
    typo = _checked.ALPHABET[(_checked.ALPHABET.index(text[position]) + 1) % 31]
    return {
        "typo": text[:position] + typo + text[position + 1 :],
        "swap": text[:2] + text[3] + text[2] + text[4:] if text[2] != text[3] else text[1:],
        "upper": text.upper(),
        "digits": str(pk),
        "wrong key": PublicIds(OTHER_KEY, label=label).encode(pk),
    }


def test_orders_are_made_and_found_by_public_ids_only(app: Any, engine: sa.Engine) -> None:
    buyer = customer(engine)
    status, made = call(app, "POST", "/orders", {"customer": buyer.public_id, "total": 5})
    assert status == 201 and made["customer"] == buyer.public_id
    assert str(buyer.id) not in json.dumps(made)
    status, shown = call(app, "GET", f"/orders/{made['id']}")
    assert (status, shown) == (200, made)

    order_id = public_ids(Order).decode(made["id"])
    for name, bad in bad_strings(made["id"], order_id, "shop.order").items():
        assert call(app, "GET", f"/orders/{bad}")[0] == 404, name
    for name, bad in bad_strings(buyer.public_id, buyer.id, "shop.customer").items():
        status, refused = call(app, "POST", "/orders", {"customer": bad, "total": 1})
        assert status == 400 and "customer" in refused, name


def test_strings_of_the_old_key_still_resolve(app: Any, engine: sa.Engine) -> None:
    buyer = customer(engine)
    old = PublicIds(OLD_KEY, label="shop.customer").encode(buyer.id)
    assert old != buyer.public_id
    status, made = call(app, "POST", "/orders", {"customer": old, "total": 2})
    assert status == 201 and made["customer"] == buyer.public_id  # answered with the new one
    with Session(engine) as session:
        found = session.scalars(sa.select(Customer).where(Customer.public_id == old)).one()
        assert found.id == buyer.id


def test_the_same_key_and_label_give_the_same_strings_everywhere() -> None:
    """What Django's PublicId, the CLI and this property show for one row agree."""
    codec = PublicIds([KEY, OLD_KEY], label="shop.order")
    assert public_ids(Order).encode(7212345678901234567) == codec.encode(7212345678901234567)


def test_a_model_without_the_property_is_named() -> None:
    from tests.sqlalchemy.sa_models import Item

    with pytest.raises(TypeError, match="Item has no public_id_property"):
        public_ids(Item)
