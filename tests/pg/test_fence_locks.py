"""The durable fences' advisory locks (D7: ``raise_node_fence()`` makes its read and write of a
fence sequence one step under a lock of class ``lease_lock_key('idfields_fence')``). Every role
may take advisory locks, and a call may be cancelled at any moment: neither a session holding
the locks nor a cancel as the lock is granted may stall other sessions' IDs for good."""

from __future__ import annotations

import contextlib
import re
import threading
import time
from typing import Any

import psycopg

from tests.pg.conftest import Connect

FENCE_LOCKS = (
    "SELECT pg_advisory_lock(idfields.lease_lock_key('idfields_fence'), b) "
    "FROM generate_series(0, 1023) AS b"
)


def test_a_session_holding_the_fence_locks_is_named_not_waited_for(
    connect: Connect, app_role: str
) -> None:
    """A role with the documented grants holds every fence lock. Another session's first ID
    (a claim, which raises its node's fence) fails within a bounded wait, naming the holder's
    pid (waiting for the lock without bound: still waiting when lock_timeout, 5 s here, ends
    it)."""
    connect().execute("DELETE FROM public.idfields_node_lease WHERE layout = 'snowflake'")
    blocker = connect(user=app_role)
    blocker.execute(FENCE_LOCKS)
    victim = connect()
    victim.execute("SET lock_timeout = '5s'")
    try:
        victim.execute("SELECT idfields.next_snowflake()")
        raise AssertionError("the first ID raised no fence")
    except psycopg.errors.LockNotAvailable as error:
        message = str(error)
    finally:
        blocker.execute("SELECT pg_advisory_unlock_all()")
    assert "idfields: the durable fence" in message, message
    # The holder is among the sessions named (a list, in no set order).
    named = re.search(r"session of pid ([\d, ]+) \(", message)
    assert named is not None, message
    assert str(blocker.info.backend_pid) in named.group(1).split(", "), message
    victim.execute("SELECT idfields.next_snowflake()")  # the lock let go: IDs go on


def test_a_call_cancelled_as_its_fence_lock_is_granted_leaves_no_lock(connect: Connect) -> None:
    """A session holds every fence lock; another session's first ID waits for its node's. The
    holder lets that one lock go and cancels the waiting call in one statement, so the cancel
    lands as the lock is granted, 20 times (a session lock taken before the block that lets it
    go on error: 18 of 20 calls left the lock held for the rest of the session)."""
    holder = connect()
    fence_class = int(
        holder.execute("SELECT idfields.lease_lock_key('idfields_fence')").fetchone()[0]
    )
    locks = (
        "SELECT objid FROM pg_locks WHERE pid = %s AND granted = %s "
        "AND locktype = 'advisory' AND classid = %s"
    )
    waiting = (  # the caller holds its node and waits for, or sleeps between tries of, a fence lock
        "SELECT n.objid::integer %% 1024 "
        "FROM pg_locks AS n, pg_stat_activity AS a WHERE n.pid = %s AND a.pid = n.pid "
        "AND n.locktype = 'advisory' AND n.classid = idfields.lease_lock_key('snowflake') "
        "AND (a.wait_event = 'PgSleep' OR EXISTS (SELECT FROM pg_locks AS f WHERE f.pid = n.pid "
        "AND NOT f.granted AND f.locktype = 'advisory' AND f.classid = %s))"
    )
    leaked = 0
    for _ in range(20):
        holder.execute("DELETE FROM public.idfields_node_lease WHERE layout = 'snowflake'")
        holder.execute(FENCE_LOCKS)
        caller = connect()
        pid = caller.info.backend_pid
        waiter = threading.Thread(target=_first_id_or_error, args=(caller,))
        waiter.start()
        bucket = None
        while waiter.is_alive() and bucket is None:
            row = holder.execute(waiting, [pid, fence_class]).fetchone()
            bucket = None if row is None else int(row[0])
            time.sleep(0.001)  # polling, not a timed assertion
        assert bucket is not None, "the call never waited for its fence's lock"
        holder.execute(
            "SELECT pg_advisory_unlock(%s, %s), pg_cancel_backend(%s)", [fence_class, bucket, pid]
        )
        waiter.join()
        holder.execute("SELECT pg_advisory_unlock_all()")
        leaked += len(holder.execute(locks, [pid, True, fence_class]).fetchall())
        caller.close()
    assert leaked == 0


def _first_id_or_error(conn: psycopg.Connection[Any]) -> None:
    with contextlib.suppress(psycopg.Error):
        conn.execute("SELECT idfields.next_snowflake()")
