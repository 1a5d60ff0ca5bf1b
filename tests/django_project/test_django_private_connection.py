"""The private coordination connection survives the server ending its session.

A database restart, a failover or ``pg_terminate_backend`` during an outage leaves the idle
private connection a dead socket. The lease calls after the outage must run on a fresh one: a
worker whose lease lapsed meanwhile otherwise fails its first claim on the stale socket, and every
request during the back-off that follows with a ``NodeError`` quoting "terminating connection".
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection

from idfields.coordination import LeaseSource
from idfields.django_app.coordination import DjangoDatabase
from idfields.layouts import get_layout

pytestmark = pytest.mark.django_db


@pytest.fixture
def db() -> Iterator[DjangoDatabase]:
    database = DjangoDatabase("default")
    yield database
    database.close()


def terminate(database: DjangoDatabase) -> None:
    """End the session of ``database``'s connection from the server side."""
    [(pid,)] = database.execute("SELECT pg_backend_pid()").rows
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        assert cursor.fetchone() == (True,)


def test_a_terminated_session_is_replaced_before_the_next_statement(db: DjangoDatabase) -> None:
    [(before,)] = db.execute("SELECT pg_backend_pid()").rows
    terminate(db)
    [(after,)] = db.execute("SELECT pg_backend_pid()").rows
    assert after != before


def test_a_claim_after_the_session_ended_gets_a_node(db: DjangoDatabase) -> None:
    source = LeaseSource(db, ttl_s=30)
    layout = get_layout("snowflake")
    first = source.acquire(layout)
    assert first.release is not None
    first.release(0)
    terminate(db)
    second = source.acquire(layout)  # the next worker's claim after an outage
    assert "node" in second.values and second.release is not None
    second.release(0)
