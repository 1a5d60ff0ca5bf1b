"""What a role with exactly the README's grants can hand the database-side functions: a lease
key of another layout is refused, a node blocked by stray advisory locks is reported as such,
and the role can read who holds which node (lease-protocol invariants D4 and D5)."""

from __future__ import annotations

import psycopg
import pytest

from tests.pg.conftest import Connect

SNOWFLAKE_GEOMETRY = "1704067200000000, 1000, 41, 22, false, 12, 0, 1023, 12, 0, 0, 1000, 2000"


def test_a_lease_key_of_another_layout_is_refused(connect: Connect, app_role: str) -> None:
    """time_slow_path('snowflake', 'traceid', ...) claimed a free traceid node and issued
    snowflake IDs on it, repeating the IDs of the backend holding that snowflake node."""
    conn = connect(user=app_role)
    for layout, key in (("snowflake", "traceid"), ("snowflake", "snowflake#0123456789ab")):
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="is not the key of"):
            conn.execute(
                f"SELECT idfields.time_slow_path('{layout}', '{key}', idfields.clock_ms() - "
                f"1704067200000, {SNOWFLAKE_GEOMETRY}, "
                "to_regclass('idfields_node_lease'))"
            )


def test_nodes_blocked_by_advisory_locks_are_not_called_leased(connect: Connect) -> None:
    """Another session holding every node's advisory lock, no lease row: the error says how
    many nodes are leased (none) and how many are locked, not 'all held by live leases'."""
    admin = connect()
    admin.execute("DELETE FROM public.idfields_node_lease WHERE layout = 'snowflake'")
    blocker = connect()
    blocker.execute(
        "SELECT pg_advisory_lock(idfields.lease_lock_key('snowflake'), n) "
        "FROM generate_series(0, 1023) n"
    )
    try:
        with pytest.raises(psycopg.errors.ConfigurationLimitExceeded) as raised:
            connect().execute("SELECT idfields.next_snowflake()")
        assert "0 of 1024 are held by live leases, the other 1024 are locked" in str(raised.value)
    finally:
        blocker.execute("SELECT pg_advisory_unlock_all()")


def test_the_app_role_reads_the_node_holders(connect: Connect, app_role: str) -> None:
    conn = connect(user=app_role)
    conn.execute("SELECT idfields.next_snowflake()")
    pid = conn.info.backend_pid
    rows = conn.execute(
        "SELECT kind, state FROM idfields.node_holders WHERE layout = 'snowflake' AND pid = %s",
        [pid],
    ).fetchall()
    assert rows == [("database", "live")]


def test_a_claim_set_by_hand_on_another_backends_node_issues_nothing_there(
    connect: Connect, app_role: str
) -> None:
    """The role rewrites its claim setting to name the node another backend holds, keeping its
    own sequence: no ID lands on that node (the tick function and the slow path refuse a claim
    whose node is not the node of the sequence's last ID, and the backend takes back its own)."""
    victim = connect()
    victim_id = int(victim.execute("SELECT idfields.next_snowflake()").fetchone()[0])
    victim_node = (victim_id >> 12) & 1023
    conn = connect(user=app_role)
    conn.execute("SELECT idfields.next_snowflake()")
    claim = conn.execute("SELECT current_setting('idfields.snowflake_lease')").fetchone()[0]
    forged = ":".join([str(victim_node), *claim.split(":")[1:]])
    ids: list[int] = []
    for _ in range(200):  # a transaction each: every one starts from the settings
        conn.execute("SELECT set_config('idfields.snowflake_lease', %s, false)", [forged])
        ids.append(int(conn.execute("SELECT idfields.next_snowflake()").fetchone()[0]))
    on_victims_node = [i for i in ids if (i >> 12) & 1023 == victim_node]
    assert on_victims_node == []
    assert len(set(ids)) == len(ids)
