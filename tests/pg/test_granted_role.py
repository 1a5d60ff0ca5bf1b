"""What a role with exactly the README's grants can hand the database-side functions: a lease
key of another layout is refused, a node blocked by stray advisory locks is reported as such,
and the role can read who holds which node (lease-protocol invariants D4 and D5)."""

from __future__ import annotations

import secrets
from typing import Any

import psycopg
import pytest
from psycopg import sql as pgsql

from idfields.layouts import Layout
from tests.pg.conftest import BOTH_PATHS, Connect, install_layouts
from tests.pg.sample_layouts import NARROW, WRAPPING

SNOWFLAKE_GEOMETRY = "1704067200000000, 1000, 41, 22, false, 12, 0, 1023, 12, 0, 0, 1000, 2000"


def test_a_lease_key_of_another_layout_is_refused(connect: Connect, app_role: str) -> None:
    """time_slow_path('snowflake', 'traceid', ...) claimed a free traceid node and issued
    snowflake IDs on it, repeating the IDs of the backend holding that snowflake node. The owner
    is refused such a key; the app role may not call the function at all."""
    owner, app = connect(), connect(user=app_role)
    for layout, key in (("snowflake", "traceid"), ("snowflake", "snowflake#0123456789ab")):
        call = (
            f"SELECT idfields.time_slow_path(ROW('{layout}', '{key}', {SNOWFLAKE_GEOMETRY})"
            f"::idfields.geometry, idfields.clock_ms() - 1704067200000, "
            f"to_regclass('idfields_node_lease'))"
        )
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="is not the key of"):
            owner.execute(call.encode())
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute(call.encode())


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
        message = str(raised.value)
        assert "0 of 1024 are held by live leases, 1024 are locked by other sessions" in message
    finally:
        blocker.execute("SELECT pg_advisory_unlock_all()")


def test_a_node_skipped_for_its_durable_fence_is_called_fenced(
    connect: Connect, one_node: Layout
) -> None:
    """The one node's durable fence 5 s ahead of the clock (a layout sharing its sequence ran
    ahead, or the clock stepped back), no lease row, no lock: the claim skips the node and says
    so (blaming other sessions' advisory locks, which no session held: 1 of 1)."""
    admin = connect()
    name = admin.execute(
        "SELECT idfields.fence_sequence(idfields.lease_lock_key(%s), 0)::text",
        [one_node.lease_key],
    ).fetchone()[0]
    fence = pgsql.Literal(name)
    before = admin.execute(pgsql.SQL("SELECT pg_sequence_last_value({}::regclass)").format(fence))
    before_ms = before.fetchone()[0]
    admin.execute(
        pgsql.SQL("SELECT setval({}::regclass, idfields.clock_ms() + 5000)").format(fence)
    )
    issue = pgsql.SQL("SELECT idfields.{}()").format(pgsql.Identifier(f"next_{one_node.name}"))
    try:
        with pytest.raises(psycopg.errors.ConfigurationLimitExceeded) as raised:
            connect().execute(issue)
    finally:  # nothing was issued on the sequence's nodes meanwhile: its other nodes go on
        restore = "SELECT setval({}::regclass, %s, %s)"
        admin.execute(pgsql.SQL(restore).format(fence), [before_ms or 0, before_ms is not None])
    message = str(raised.value).splitlines()[0]
    assert "0 of 1 are held by live leases, 0 are locked by other sessions" in message
    assert "1 are fenced" in message


def test_the_app_role_reads_the_node_holders(connect: Connect, app_role: str) -> None:
    conn = connect(user=app_role)
    conn.execute("SELECT idfields.next_snowflake()")
    pid = conn.info.backend_pid
    rows = conn.execute(
        "SELECT kind, state FROM idfields.node_holders WHERE layout = 'snowflake' AND pid = %s",
        [pid],
    ).fetchall()
    assert rows == [("database", "live")]


@BOTH_PATHS
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


# The internal functions, called by the app role with a geometry of its own choosing: a layout
# name and lease key of a fresh namespace ('forged', 'forged#<hex>'), where every node is free, and
# the node range narrowed to the node the victim holds; {tick} is the victim's first tick.
FORGED_GEOMETRY = "1704067200000000, 1000, 41, 22, false, 12, {node}, {node}, 12, 0, 0, 1000, 2000"
FORGED_CALLS = {
    "take_id_ranges": "SELECT pg_catalog.generate_series(r.first_id, r.last_id) FROM "
    "idfields.take_id_ranges(ROW({forged}, (idfields.clock_ms() - {tick}) * 1000, 1000, 41, "
    "22, false, 12, {node}, {node}, 12, 0, 0, 1000, 2000)::idfields.geometry, 5000, NULL) AS r",
    "time_slow_path": "SELECT idfields.time_slow_path(ROW({forged}, {geometry})"
    "::idfields.geometry, {tick}, NULL) FROM pg_catalog.generate_series(1, 300)",
    "time_next": "SELECT idfields.time_next(ROW({forged}, {geometry})::idfields.geometry, "
    "{tick}, NULL, 0) "
    "FROM pg_catalog.generate_series(1, 300)",
}


@pytest.mark.parametrize("function", sorted(FORGED_CALLS))
def test_a_forged_geometry_issues_nothing_on_another_backends_node(
    connect: Connect, app_role: str, function: str
) -> None:
    """Another backend holds a node and issues IDs; the app role calls an internal function
    with the geometry narrowed to that node (and, for take_id_ranges(), an epoch that puts its
    clock on that backend's first tick). Refused, it issues none of that backend's IDs."""
    victim = connect()
    victim_ids = [int(row[0]) for row in victim.execute(
        "SELECT idfields.take_snowflake(5000)").fetchall()]  # fmt: skip
    node = (victim_ids[0] >> 12) & 1023
    tick = victim_ids[0] >> 22
    attacker = connect(user=app_role)
    key = f"forged#{secrets.token_hex(4)}"
    query = FORGED_CALLS[function].format(
        forged=f"'forged', '{key}'",
        node=node,
        tick=tick,
        geometry=FORGED_GEOMETRY.format(node=node),
    )
    try:
        issued = [int(row[0]) for row in attacker.execute(query.encode()).fetchall()]
    except psycopg.errors.InsufficientPrivilege:
        issued = []
    finally:
        victim.execute("DELETE FROM public.idfields_node_lease WHERE layout = %s", [key])
    on_node = [i for i in issued if (i >> 12) & 1023 == node and i >> 22 <= victim_ids[-1] >> 22]
    repeats = set(issued) & set(victim_ids)
    assert (len(repeats), len(on_node)) == (0, 0)


# What a caller may hand a function it can run that reads or writes state (its input arguments,
# which come first): a count, an ID, a reference time, the lease table its own search_path
# finds. Never a layout, lease key, geometry or tick (an IMMUTABLE function, such as
# lease_lock_key(layout), only computes).
CALLER_ARGUMENTS = {"n", "id", "reference", "visible_lease"}
CATALOG = """
SELECT p.oid::regprocedure::text, l.lanname = 'sql', p.provolatile = 'i', p.prosecdef,
    p.proconfig, coalesce(p.proargnames[1:p.pronargs], '{}'),
    has_function_privilege(%s, p.oid, 'EXECUTE')
FROM pg_proc AS p JOIN pg_language AS l ON l.oid = p.prolang
WHERE p.pronamespace = 'idfields'::regnamespace
"""


@pytest.fixture
def user_layouts(pg_kwargs: dict[str, object]) -> None:
    install_layouts(pg_kwargs, NARROW, WRAPPING)


@BOTH_PATHS
@pytest.mark.usefixtures("user_layouts")
def test_every_function_a_role_may_run_takes_nothing_forgeable(
    connect: Connect, app_role: str
) -> None:
    """Over the catalog, built-in and user layouts alike: each function the app role may run
    takes only caller arguments, and each that is not bound SQL runs as the owner under the
    pinned search_path; the functions that take more are the owner's."""
    rows = connect().execute(CATALOG, [app_role]).fetchall()
    runnable = {name for name, *_, may in rows if may}
    assert {"idfields.issue_narrow(regclass)", "idfields.take_wrapping(bigint)"} <= runnable
    for name, is_sql, pure, definer, config, arguments, may in rows:
        if may:
            assert pure or set(arguments) <= CALLER_ARGUMENTS, name
            # or a hot path (next_<layout>(), next_decimal()) or a binding its plan holds
            # (window_<layout>(), position_<layout>()): no argument, and no SET clause, which
            # would cost every call and hide the lease table the caller's search_path finds;
            # every name in it qualified (test_operations.py plants the rest)
            binding = definer and config is None and not arguments
            pinned = (definer, config) == (True, ["search_path=pg_catalog, pg_temp"])
            assert is_sql or pinned or binding, name
    owners_only = {name for name, *_, may in rows if not may}
    internal = {"issue_narrow_at(bigint,regclass)", "issue_wrapping_at(bigint,regclass)"}
    assert {f"idfields.{name}" for name in internal} <= owners_only


def forge_switch(
    conn: psycopg.Connection[Any], sequence: int, node: int, layout: str = "snowflake"
) -> None:
    """Set this session's switch of ``layout`` to ``sequence`` (an OID), its claim to ``node``
    on that sequence, its limit far ahead, and call the owner-run issuer, refused or not."""
    try:
        with conn.transaction():
            conn.execute(f"SELECT set_config('idfields.{layout}', %s, true)", [str(sequence)])
            conn.execute(
                f"SELECT set_config('idfields.{layout}_lease', %s, false)",
                [f"{node}:0:0:{sequence}:0:0"],
            )
            conn.execute(f"SELECT set_config('idfields.{layout}_limit', '999999999999', false)")
            conn.execute(f"SELECT idfields.issue_{layout}(NULL)")
    except psycopg.Error:
        pass  # refused


@pytest.mark.parametrize("layout", ["snowflake", "traceid", "one_node"])
def test_a_forged_switch_moves_no_sequence_the_role_may_not_write(
    connect: Connect, app_role: str, layout: str, request: pytest.FixtureRequest
) -> None:
    """The owner's table, its bigserial at 3. The app role, denied setval() on it, names it in
    the switch; the owner-run issuer must not setval() it (an issuer that trusts the switch:
    3 to about 3.8e17)."""
    owner = connect()
    table = pgsql.Identifier(f"forged_switch_{secrets.token_hex(3)}")
    owner.execute(pgsql.SQL("CREATE TABLE {} (id bigserial PRIMARY KEY, x int)").format(table))
    owner.execute(pgsql.SQL("INSERT INTO {} (x) VALUES (1), (2), (3)").format(table))
    sequence = owner.execute(
        "SELECT pg_get_serial_sequence(%s, 'id')::regclass::oid", [table.as_string(owner)]
    ).fetchone()[0]
    app = connect(user=app_role)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        app.execute("SELECT setval(%s::oid::regclass, 100)", [sequence])
    if layout == "one_node":  # a user layout's issuer, rendered by idfields.sql.layouts
        layout = request.getfixturevalue("one_node").name
    forge_switch(app, sequence, 0, layout)
    value = owner.execute("SELECT pg_sequence_last_value(%s::oid::regclass)", [sequence])
    assert value.fetchone() == (3,)
    owner.execute(pgsql.SQL("DROP TABLE {}").format(table))


def test_a_forged_switch_never_moves_a_durable_fence(
    connect: Connect, app_role: str, one_node: Layout
) -> None:
    """The app role names a node's durable fence in the switch (a claim on the node of the
    fence's value, read as an ID); the owner-run issuer must not setval() it (an issuer that
    trusts the switch: from about 1.8e12 to about 3.8e17, and every later claim of the node
    fails, bigint out of range)."""
    admin = connect()
    tick = int(admin.execute("SELECT idfields.clock_ms() - 1704067200000").fetchone()[0])
    hook = pgsql.SQL("SELECT idfields.{}(%s)").format(pgsql.Identifier(f"next_{one_node.name}_at"))
    first = connect()
    first.execute(hook, [tick])  # the node's first claim raises its fence
    first.close()  # its advisory lock goes with the session
    name = admin.execute(
        "SELECT idfields.fence_sequence(idfields.lease_lock_key(%s), 0)::text",
        [one_node.lease_key],
    ).fetchone()[0]
    fence = f"SELECT pg_sequence_last_value('{name}'::regclass)"
    before = int(admin.execute(fence.encode()).fetchone()[0])
    app = connect(user=app_role)
    sequence = app.execute("SELECT %s::regclass::oid", [name]).fetchone()[0]
    forge_switch(app, sequence, (before >> 12) & 1023)
    assert admin.execute(fence.encode()).fetchone() == (before,)
