"""``BackgroundRenewal``: leases renew on a thread of their own, a lease taken by another process
sends the generator to another node, and giving the node back ends the thread (on
``SQLAlchemyDatabase``, whose connections are per thread, as the renewal thread needs)."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from idfields import Layout, Node, Sequence, Timestamp, make_generator
from idfields.coordination import LeaseSource, list_leases
from idfields.coordination._background import BackgroundRenewal
from idfields.layouts import SNOWFLAKE_EPOCH
from idfields.sqlalchemy_ext import SQLAlchemyDatabase, metadata


@pytest.fixture
def db(engine: sa.Engine) -> Iterator[SQLAlchemyDatabase]:
    metadata.create_all(engine)
    database = SQLAlchemyDatabase(engine)
    yield database
    database.dispose()


def lease_layout(name: str) -> Layout:
    return Layout(name, [Timestamp(41, unit="ms", epoch=SNOWFLAKE_EPOCH), Node(10), Sequence(12)])


def renewal_threads(layout: str) -> list[threading.Thread]:
    return [
        t for t in threading.enumerate() if t.name.startswith(f"idfields lease renewal ({layout} ")
    ]


def test_leases_renew_on_their_own_thread_and_stop_with_the_generator(
    db: SQLAlchemyDatabase,
) -> None:
    layout = lease_layout(f"background_{secrets.token_hex(4)}")
    generator = make_generator(layout, BackgroundRenewal(LeaseSource(db, ttl_s=0.3)))
    first = generator()
    node = generator.node
    time.sleep(1.0)  # idle for three ttls: only the thread keeps the lease
    (lease,) = list_leases(db, layout.name)
    assert lease.live, "renewed while the generator made no ID"
    assert generator() > first and generator.node == node
    (thread,) = renewal_threads(layout.name)
    generator.close()
    thread.join(5)
    assert not thread.is_alive()
    assert not list_leases(db, layout.name)[0].live


def test_a_lease_taken_meanwhile_sends_the_generator_to_another_node(
    db: SQLAlchemyDatabase,
) -> None:
    layout = lease_layout(f"background_lost_{secrets.token_hex(4)}")
    generator = make_generator(layout, BackgroundRenewal(LeaseSource(db, ttl_s=0.3)))
    before = generator()
    node = generator.node["node"]  # type: ignore[index]
    db.execute(  # another process holds the node now (as after a lapse and a claim)
        "UPDATE idfields_node_lease SET holder = %s WHERE layout = %s AND node = %s",
        ["elsewhere:1:x", layout.lease_key, node],
    )
    time.sleep(0.4)  # past the lease's end: the generator must renew before its next ID
    after = generator()
    assert after > before and generator.node != {"node": node}
    generator.close()
