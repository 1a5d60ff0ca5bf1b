"""A layout's durable fences are its own (D7 of docs/explanation/lease-protocol-database.md): a
coarse user layout (1 s ticks), whose fence runs about two ticks ahead of the clock, never
fences a node of another layout, and a claim that finds no node counts each reason once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from databases import DbUrl
from psycopg import sql as pgsql

from idfields import sql
from idfields.coordination._leases import lease_lock_key
from idfields.layouts import SNOWFLAKE_EPOCH, Layout, Node, Sequence, Timestamp
from idfields.sql.layouts import render_layout_function

pytestmark = pytest.mark.postgres

COARSE = Layout(
    "coarse_ticks", [Timestamp(32, unit="s", epoch=SNOWFLAKE_EPOCH), Node(10), Sequence(21)]
)
APP = "host-elsewhere:4242:boot:1:feedface"  # another host's live process (L3)


@pytest.fixture
def admin(empty_database: DbUrl) -> Iterator[psycopg.Connection[Any]]:
    """The functions and the coarse layout's in a database of their own."""
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as conn:
        conn.execute(sql.load(sql.VERSION).encode())
        conn.execute(render_layout_function(COARSE)[0].encode())
        yield conn


def held_but(admin: psycopg.Connection[Any], lease_key: str, free: int) -> None:
    """Every node of the layout leased far ahead by a live app process, but ``free``."""
    admin.execute(
        "INSERT INTO idfields_node_lease (layout, node, holder, acquired_at_ms, expires_at_ms) "
        "SELECT %s, n, %s, 0, %s FROM generate_series(0, 1023) AS n WHERE n <> %s",
        [lease_key, APP, 2**62, free],
    )


def test_a_coarse_layout_never_fences_a_snowflake_node(admin: psycopg.Connection[Any]) -> None:
    """Snowflake's one free node and the coarse layout's one free node shared a durable fence:
    the coarse backend raised it about two seconds ahead, past snowflake's 1 s window, and the
    snowflake backend found no free node, 'with -1 locked by other sessions'."""
    sf, coarse = lease_lock_key("snowflake"), lease_lock_key(COARSE.lease_key)
    node = 0
    mate = (sf + node - coarse) % 1024  # the coarse node that shared snowflake node 0's fence
    held_but(admin, "snowflake", node)
    held_but(admin, COARSE.lease_key, mate)
    with psycopg.connect(admin.info.dsn, autocommit=True) as backend:
        backend.execute(
            pgsql.SQL("SELECT idfields.{}()").format(pgsql.Identifier("next_coarse_ticks"))
        )
    with psycopg.connect(admin.info.dsn, autocommit=True) as backend:
        try:
            row = backend.execute("SELECT idfields.next_snowflake()").fetchone()
        except psycopg.errors.ConfigurationLimitExceeded as error:  # 53400
            pytest.fail(f"snowflake's free node was refused: {error}")
    assert row is not None and (int(row[0]) >> 12) & 1023 == node


def test_no_free_node_counts_each_reason_once(admin: psycopg.Connection[Any]) -> None:
    """The backend's own row, fenced past the window, was counted as held and as fenced: 'no
    free node: 1 of 1 held by live leases, -1 locked by other sessions, 1 fenced'."""
    with psycopg.connect(admin.info.dsn, autocommit=True) as backend:
        backend.execute("SELECT idfields.next_snowflake()")  # claims a node
        pid = backend.info.backend_pid
        held = admin.execute(
            "SELECT node FROM idfields_node_lease WHERE layout = 'snowflake' AND holder LIKE %s",
            [f"pg:{pid}:%"],
        ).fetchone()
        assert held is not None
        held_but(admin, "snowflake", held[0])
        admin.execute(
            "SELECT setval(idfields.fence_sequence(idfields.lease_lock_key('snowflake'), %s), "
            "idfields.clock_ms() + 60000)",
            [held[0]],
        )
        backend.execute("DISCARD ALL")  # the re-take of its own row meets the fence
        with pytest.raises(psycopg.errors.ConfigurationLimitExceeded) as refused:
            backend.execute("SELECT idfields.next_snowflake()")
    message = str(refused.value)
    assert "-1" not in message
    assert "1023 of 1024 are held by live leases, 0 are locked by other sessions" in message
    assert "1 are fenced" in message
