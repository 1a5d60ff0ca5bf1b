"""A claim setting whose promise was written by hand never moves a durable fence (D4, D6, D7):
the fence is the owner's, and every later claim of its nodes reads it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import psycopg
from psycopg import sql as pgsql

from idfields import sql
from idfields.layouts import Layout
from tests.pg.conftest import TABLES, Connect, grant_as_documented


def test_a_forged_promise_never_moves_a_durable_fence(
    connect: Connect, one_node: Layout, app_role: str
) -> None:
    """The app role claims the one node, rewrites the promise of its claim setting (field 3)
    far ahead and its limit to 0 (so the next call takes the slow path, which keeps a claim on
    the sequence's node and renews only past the promise) and calls next_<layout>() again."""
    admin = connect()
    fence = pgsql.Literal(
        admin.execute(
            "SELECT idfields.fence_sequence(idfields.lease_lock_key(%s), 0)::text",
            [one_node.lease_key],
        ).fetchone()[0]
    )
    read = pgsql.SQL("SELECT pg_sequence_last_value({}::regclass)").format(fence)
    before_ms = admin.execute(read).fetchone()[0]
    issue = pgsql.SQL("SELECT idfields.{}()").format(pgsql.Identifier(f"next_{one_node.name}"))
    app = connect(user=app_role)
    app.execute(issue)
    lease = f"idfields.{one_node.name}_lease"
    claim = app.execute("SELECT current_setting(%s)", [lease]).fetchone()[0].split(":")
    claim[2] = str(4_000_000_000_000_000)
    app.execute("SELECT set_config(%s, %s, false)", [lease, ":".join(claim)])
    app.execute("SELECT set_config(%s, '0', false)", [f"idfields.{one_node.name}_limit"])
    try:
        app.execute(issue)
        after_ms = admin.execute(read).fetchone()[0]
        now_ms = admin.execute("SELECT idfields.clock_ms()").fetchone()[0]
        app.close()
        admin.execute("DELETE FROM idfields_node_lease WHERE layout = %s", [one_node.lease_key])
        try:  # the node is claimable again
            connect().execute(issue)
            claim_error = None
        except psycopg.Error as error:
            claim_error = str(error).splitlines()[0]
        assert (after_ms < now_ms + 10_000, claim_error) == (True, None), (
            before_ms,
            after_ms,
            now_ms,
            claim_error,
        )
    finally:
        restore = "SELECT setval({}::regclass, %s, %s)"
        admin.execute(pgsql.SQL(restore).format(fence), [before_ms or 0, before_ms is not None])


def test_a_forged_claim_never_moves_the_fence_of_a_node_held_by_another(
    connect: Connect, one_node: Layout, app_role: str
) -> None:
    """Another backend holds the one node; the app role (PUBLIC's TEMPORARY, as by default)
    makes its own pg_temp.idfields_<layout> with an ID on that node, writes a claim of the node
    with a far promise and calls next_<layout>(): an issuer that trusted them, as the owner,
    raised the node's fence to the promise."""
    admin = connect()
    fence = pgsql.Literal(
        admin.execute(
            "SELECT idfields.fence_sequence(idfields.lease_lock_key(%s), 0)::text",
            [one_node.lease_key],
        ).fetchone()[0]
    )
    read = pgsql.SQL("SELECT pg_sequence_last_value({}::regclass)").format(fence)
    before_ms = admin.execute(read).fetchone()[0]
    issue = pgsql.SQL("SELECT idfields.{}()").format(pgsql.Identifier(f"next_{one_node.name}"))
    victim = connect()
    victim.execute(issue)
    app = connect(user=app_role)
    seq = f"idfields_{one_node.name}"
    app.execute(
        pgsql.SQL("CREATE TEMPORARY SEQUENCE pg_temp.{} MINVALUE -1").format(pgsql.Identifier(seq))
    )
    oid = app.execute(
        "SELECT setval(to_regclass('pg_temp.' || %s), "
        "(idfields.clock_ms() - 1704067200000) << 22), to_regclass('pg_temp.' || %s)::oid",
        [seq, seq],
    ).fetchone()[1]
    app.execute(
        "SELECT set_config(%s, %s, false)",
        [f"idfields.{one_node.name}_lease", f"0:0:4000000000000000:{oid}:x:0"],
    )
    app.execute("SELECT set_config(%s, '0', false)", [f"idfields.{one_node.name}_limit"])
    try:
        try:  # refused: a position not the owner's (D9), or the other backend's one node
            issued = app.execute(issue).fetchone()[0]
        except (
            psycopg.errors.ConfigurationLimitExceeded,
            psycopg.errors.ObjectNotInPrerequisiteState,
        ):
            issued = None
        after_ms = admin.execute(read).fetchone()[0]
        now_ms = admin.execute("SELECT idfields.clock_ms()").fetchone()[0]
        assert after_ms < now_ms + 10_000, (before_ms, after_ms, now_ms, issued)
    finally:
        restore = "SELECT setval({}::regclass, %s, %s)"
        admin.execute(pgsql.SQL(restore).format(fence), [before_ms or 0, before_ms is not None])


def test_forged_claims_never_fence_off_every_node(
    app_role: str, fresh_database: Callable[[str], str]
) -> None:
    """In a database of its own: the app role (documented grants, PUBLIC's TEMPORARY) writes one
    forged snowflake claim per node, 1,024 calls; then no fence sequence may be past the clock
    by more than a lease, and the next snowflake and traceid claims find a node."""
    url = fresh_database("postgresql")
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(TABLES)
        admin.execute(sql.load(sql.VERSION))
        grant_as_documented(admin, app_role, str(admin.info.dbname))
        with psycopg.connect(url, user=app_role, autocommit=True) as app:
            app.execute("SELECT idfields.next_snowflake()")  # the owner makes the position
            oid = app.execute("SELECT 'pg_temp.idfields_snowflake'::regclass::oid").fetchone()[0]
            for node in range(1024):
                with contextlib.suppress(psycopg.errors.InsufficientPrivilege):  # the owner's
                    app.execute(
                        "SELECT setval('pg_temp.idfields_snowflake', ((idfields.clock_ms() - "
                        "1704067200000) << 22) | (%s::bigint << 12))",
                        [node],
                    )
                app.execute(
                    "SELECT set_config('idfields.snowflake_lease', %s, false), set_config("
                    "'idfields.snowflake_limit', '0', false)",
                    [f"{node}:0:4000000000000000:{oid}:x:0"],
                )
                # An issuer that refuses the forged claim claims a node of its own instead.
                with contextlib.suppress(psycopg.errors.ConfigurationLimitExceeded):
                    app.execute("SELECT idfields.next_snowflake()")
        far = admin.execute(
            "SELECT count(*) FROM generate_series(0, 1023) AS b, (VALUES ('snowflake'), "
            "('traceid')) AS l(k) WHERE pg_sequence_last_value(idfields.fence_sequence("
            "idfields.lease_lock_key(l.k), b)) > idfields.clock_ms() + 10000"
        ).fetchone()[0]
        refused = []
        for layout in ("snowflake", "traceid"):
            try:
                admin.execute(
                    pgsql.SQL("SELECT idfields.{}()").format(pgsql.Identifier(f"next_{layout}"))
                )
            except psycopg.Error as error:
                refused.append(str(error).splitlines()[0])
        assert (far, refused) == (0, []), (far, refused)
