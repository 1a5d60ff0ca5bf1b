"""IDs handed out in a transaction that rolled back are never handed out again (invariant D7 of
docs/explanation/lease-protocol-database.md). The rollback takes back the lease row the
transaction wrote (a claim, a re-take, a renewal), yet the client read the IDs and may keep
them; the node's durable fence, which no rollback, DISCARD or exit undoes, still covers them,
and every later claim of the node starts after it: the backend's own re-take after a reset,
another backend's claim, an app process's claim of a lapsed or never-used node."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest
from dbapi_database import DbApiDatabase
from psycopg import sql

from idfields import make_generator
from idfields.coordination import LeaseSource
from idfields.layouts import SNOWFLAKE_EPOCH, Layout
from idfields.sql.fences import fence_sequence
from tests.pg.conftest import Connect, terminate

Ranges = list[tuple[int, int]]
EPOCH_MS = int(SNOWFLAKE_EPOCH.timestamp() * 1000)


def take_ranges(conn: psycopg.Connection[Any], n: int) -> Ranges:
    rows = conn.execute("SELECT first_id, last_id FROM idfields.take_snowflake_ranges(%s)", [n])
    return [(int(first), int(last)) for first, last in rows.fetchall()]


def repeats(a: Ranges, b: Ranges) -> int:
    """How many IDs two lists of (first, last) ranges share."""
    shared, i, j = 0, 0, 0
    a, b = sorted(a), sorted(b)
    while i < len(a) and j < len(b):
        shared += max(0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]) + 1)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return shared


def test_a_rolled_back_run_ahead_is_not_repeated_after_a_reset(connect: Connect) -> None:
    """2,000,000 IDs (about 488 ticks ahead of the clock: the slow path renews the lease on
    the way) in a transaction that rolls back, DISCARD ALL, the same call again in the same
    backend (SQL without the durable fence: about 1,000,000 repeated)."""
    conn = connect(prepare_threshold=None)
    conn.execute("SELECT idfields.next_snowflake()")  # a committed claim
    conn.execute("BEGIN")
    rolled_back = take_ranges(conn, 2_000_000)
    conn.execute("ROLLBACK")
    conn.execute("DISCARD ALL")
    again = take_ranges(conn, 2_000_000)
    assert repeats(rolled_back, again) == 0


def ids_at(conn: psycopg.Connection[Any], layout: Layout, tick: int, count: int = 10) -> set[int]:
    """``count`` IDs of ``layout`` at the given tick (the test hook's frozen clock)."""
    hook = sql.Identifier(f"next_{layout.name}_at")
    query = sql.SQL("SELECT idfields.{}(%s) FROM generate_series(1, %s)").format(hook)
    return {int(row[0]) for row in conn.execute(query, [tick, count]).fetchall()}


def end_backend(admin: psycopg.Connection[Any], conn: psycopg.Connection[Any]) -> None:
    """Terminate ``conn``'s backend and wait until it is gone (its advisory locks with it)."""
    terminate(admin, conn.info.backend_pid)


def claimed_elsewhere(
    claimer: str, connect: Connect, postgres_url: str, layout: Layout, ticks: list[int]
) -> set[int]:
    """IDs that a claimer of node 0 issues at ``ticks``: another backend (test hook), or an
    app process whose clock stands at each tick in turn."""
    if claimer == "backend":
        conn = connect()
        return {i for tick in ticks for i in ids_at(conn, layout, tick)}
    now = [ticks[0]]

    def clock() -> int:
        return (EPOCH_MS + now[0]) * 1_000_000

    database = DbApiDatabase("postgresql", postgres_url)
    generator = make_generator(layout, LeaseSource(database, clock=clock), clock=clock)
    try:
        found: set[int] = set()
        for tick in ticks:
            now[0] = tick
            found |= {generator() for _ in range(10)}
        assert generator.node == {"node": 0}
        return found
    finally:
        generator.close()
        database.close()


def clock_tick(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT idfields.clock_ms() - %s", [EPOCH_MS]).fetchone()
    assert row is not None
    return int(row[0])


def test_a_sessions_first_ids_in_a_rolled_back_transaction_are_not_repeated(
    connect: Connect, one_node: Layout
) -> None:
    """A session's first IDs in a transaction that rolls back: the rollback takes back the
    claim and the temporary sequence created for it too, so the next call claims afresh with
    no position, no reset needed (SQL without the durable fence: 10 repeated)."""
    conn = connect()
    tick = clock_tick(conn)
    conn.execute("BEGIN")
    rolled_back = ids_at(conn, one_node, tick)
    conn.execute("ROLLBACK")
    assert len(rolled_back & ids_at(conn, one_node, tick)) == 0


@pytest.mark.parametrize("claimer", ["backend", "app"])
def test_a_transaction_past_its_promise_rolled_back_then_ended_is_not_repeated(
    connect: Connect, postgres_url: str, one_node: Layout, claimer: str
) -> None:
    """A backend's committed claim promises 2 s; a transaction then issues for 3 s (renewing
    its lease on the way), rolls back and the backend is terminated. A claimer of the lapsed
    row issues at the ticks the rolled-back transaction used (SQL without the durable fence:
    10 repeated, for a backend and for an app process)."""
    admin, holder = connect(), connect()
    t0 = clock_tick(admin)
    issued = ids_at(holder, one_node, t0)  # committed: promise t0 + 2 s
    holder.execute("BEGIN")
    for step in range(1, 7):
        issued |= ids_at(holder, one_node, t0 + 500 * step)
    holder.execute("ROLLBACK")
    end_backend(admin, holder)
    again = claimed_elsewhere(claimer, connect, postgres_url, one_node, [t0 + 2600, t0 + 3000])
    assert len(issued & again) == 0


@pytest.mark.parametrize("claimer", ["backend", "app"])
def test_a_never_used_node_claimed_in_a_rolled_back_transaction_is_not_repeated(
    connect: Connect, postgres_url: str, one_node: Layout, claimer: str
) -> None:
    """A transaction claims the never-used node 0, issues for 1 s and rolls back: no lease row
    is left, and the backend is terminated. The next claimer of node 0 issues at those ticks
    (SQL without the durable fence: 20 repeated, for a backend and for an app process)."""
    admin, holder = connect(), connect()
    t0 = clock_tick(admin)
    holder.execute("BEGIN")
    issued = {i for step in range(3) for i in ids_at(holder, one_node, t0 + 500 * step)}
    holder.execute("ROLLBACK")
    end_backend(admin, holder)
    assert admin.execute(
        "SELECT count(*) FROM idfields_node_lease WHERE layout = %s", [one_node.lease_key]
    ).fetchone() == (0,)
    again = claimed_elsewhere(claimer, connect, postgres_url, one_node, [t0 + 500, t0 + 1000])
    assert len(issued & again) == 0


def test_the_app_role_reads_the_durable_fences_and_never_writes_them(
    connect: Connect, app_role: str
) -> None:
    """A role with the documented grants may read a fence sequence (an app claim does), never
    move it (a lower fence would repeat IDs) nor reach the functions that raise it; and the app
    side names the very sequence the SQL functions use."""
    admin, conn = connect(), connect()
    conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(app_role)))
    for key, node in [("snowflake", 0), ("snowflake", 1023), ("traceid", 65535)]:
        row = admin.execute(
            "SELECT idfields.fence_sequence(idfields.lease_lock_key(%s), %s)::text", [key, node]
        )
        name = fence_sequence(key, node)
        assert row.fetchone() == (f"idfields.{name}",)
        qualified = sql.Literal(f"idfields.{name}")
        conn.execute(sql.SQL("SELECT pg_sequence_last_value({}::regclass)").format(qualified))
        for write in ("setval({}::regclass, 1)", "nextval({}::regclass)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql.SQL("SELECT " + write).format(qualified))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("SELECT idfields.raise_node_fence(0, 0, 1)")


def lapsed_row_given_back(
    connect: Connect, layout: Layout
) -> tuple[psycopg.Connection[Any], set[int], int]:
    """A backend (returned) claims node 0 at the clock's tick t0 (returned), lets go of its
    advisory locks and idles past its lease; another backend claims the lapsed node at t0 + 3 s,
    issues 10 IDs (returned) and rolls back, so the row is the first backend's again."""
    old, other = connect(), connect()
    t0 = clock_tick(old)
    ids_at(old, layout, t0)  # claims node 0, committed: promise about t0 + 2 s
    old.execute("SELECT pg_advisory_unlock_all()")
    other.execute("BEGIN")
    theirs = ids_at(other, layout, t0 + 3000)  # the old row lapsed: claimed, fenced
    other.execute("ROLLBACK")
    return old, theirs, t0


def test_a_lapsed_row_given_back_by_a_rollback_is_claimed_not_renewed(
    connect: Connect, one_node: Layout
) -> None:
    """A backend lets go of its advisory locks (``pg_advisory_unlock_all()``, which job queues
    and hand-written pooler reset lists run) and idles past its lease. Another backend claims
    the lapsed node, issues and rolls back: the row is the first backend's again, lapsed. The
    first backend's next call must not renew it as its own, but claim it, starting after the
    durable fence (a renewal: 10 of the other backend's 10 IDs repeated). The other backend
    still holds the node's advisory lock, so the claim may also be refused."""
    old, theirs, t0 = lapsed_row_given_back(connect, one_node)
    try:
        again = ids_at(old, one_node, t0 + 3000)
    except psycopg.errors.ConfigurationLimitExceeded as error:  # the node is locked
        assert "locked by other sessions" in str(error)
        again = set()
    assert len(theirs & again) == 0


def test_an_app_claim_that_waited_for_a_rolled_back_renewal_starts_after_its_ids(
    connect: Connect, postgres_url: str, one_node: Layout
) -> None:
    """A backend takes its lapsed row back in an open transaction, then lets go of its advisory
    locks (``pg_advisory_unlock_all()``). An app process claims the node as the row was
    committed: its UPDATE waits for the backend's. The backend renews, raising the durable
    fence over the IDs it hands out, and rolls back; the app's claim then goes through and
    must start after that fence (with the fence read before the UPDATE waited: 10 of the
    backend's 10 IDs repeated)."""
    admin, old = connect(), connect()
    t0 = clock_tick(old)
    ids_at(old, one_node, t0)  # claims node 0, committed: promise about t0 + 2 s
    old.execute("BEGIN")
    ids_at(old, one_node, t0 + 2500)  # takes the lapsed row back, uncommitted: the row is locked
    old.execute("SELECT pg_advisory_unlock_all()")
    now = [t0 + 3400]
    database = DbApiDatabase("postgresql", postgres_url)
    clock = lambda: (EPOCH_MS + now[0]) * 1_000_000  # noqa: E731
    generator = make_generator(one_node, LeaseSource(database, clock=clock), clock=clock)
    app_ids: list[int] = []
    app = threading.Thread(target=lambda: app_ids.extend(generator() for _ in range(10)))
    app.start()
    waiting = "SELECT count(*) FROM pg_locks WHERE NOT granted AND pid <> %s AND pid <> %s"
    pids = [old.info.backend_pid, admin.info.backend_pid]
    while app.is_alive() and admin.execute(waiting, pids).fetchone() == (0,):
        time.sleep(0.005)  # polling until the app's UPDATE waits for the row lock
    theirs = ids_at(old, one_node, t0 + 3400)  # renews: the fence moves past t0 + 3400
    old.execute("ROLLBACK")
    app.join()
    generator.close()
    database.close()
    assert len(app_ids) == 10
    assert len(theirs & set(app_ids)) == 0


def test_a_clock_stepped_back_over_a_rolled_back_claim_of_a_lapsed_row_repeats_no_id(
    connect: Connect, one_node: Layout
) -> None:
    """As above, then the clock steps back 1.5 s (the test hook's tick): the row's promise lies
    ahead of it, so the first backend renews the row as its own. The renewal starts at the fence
    the other backend's IDs raised, which lies further ahead than the window: the backend leaves
    the node and, the layout having one node, finds none (a renewal that read no fence issued
    again, and 10 of the other backend's 10 IDs came again at t0 + 3 s)."""
    old, theirs, t0 = lapsed_row_given_back(connect, one_node)
    assert len(theirs) == 10
    with pytest.raises(psycopg.errors.ConfigurationLimitExceeded, match="no free"):
        ids_at(old, one_node, t0 + 1500)
