"""Generator-id claims of the database-side decimal layout (``decimal_slow_path()``) and what
app processes claim beside them: a generator id under which any ID went out is never handed out
again, whatever rolls back; backends take blocks of one generator id from a permanent sequence,
so a claim holds no lock for long and a pooler's reset costs a block, not a generator id
(invariant D8 of docs/explanation/lease-protocol-database.md)."""

from __future__ import annotations

import dataclasses
import secrets
from typing import Any

import psycopg
import pytest
from databases import DbUrl
from dbapi_database import DbApiDatabase
from needs import NEEDS
from psycopg import sql as pgsql

from idfields import sql
from idfields.coordination import LAUNCH_ENV, DecimalSource
from idfields.errors import NodeError
from idfields.layouts import get_layout
from tests.pg import pgbouncer
from tests.pg.conftest import Connect, drop_role, install_layouts, run_in_threads

DECIMAL = get_layout("decimal")


def _ids(conn: psycopg.Connection[Any], count: int) -> list[int]:
    rows = conn.execute(
        "SELECT idfields.next_decimal() FROM generate_series(1, %s)", [count]
    ).fetchall()
    return [int(row[0]) for row in rows]


def _generator(value: int) -> tuple[int, int]:
    decoded = DECIMAL.decode(value).values
    return decoded["launch_id"], decoded["generator_id"]


def test_ids_of_a_rolled_back_claim_are_never_issued_again_by_another_backend(
    connect: Connect, pg_kwargs: dict[str, object]
) -> None:
    """The claim's counter increment is undone with the transaction; the 100 IDs were read."""
    install_layouts(pg_kwargs)
    first, other = connect(), connect()
    with first.transaction(force_rollback=True):
        seen = _ids(first, 100)  # the transaction's first IDs: it claims a generator id
    repeated = set(seen) & set(_ids(other, 100))
    assert not repeated, f"{len(repeated)} of the {len(seen)} IDs read before the rollback repeat"


def test_ids_of_a_rolled_back_claim_are_never_issued_again_by_the_same_backend(
    connect: Connect, pg_kwargs: dict[str, object]
) -> None:
    install_layouts(pg_kwargs)
    conn = connect()
    with conn.transaction(force_rollback=True):
        seen = _ids(conn, 100)
    repeated = set(seen) & set(_ids(conn, 100))
    assert not repeated, f"{len(repeated)} of the {len(seen)} IDs read before the rollback repeat"


def test_ids_read_before_a_rollback_to_savepoint_are_not_issued_again_in_the_transaction(
    connect: Connect, pg_kwargs: dict[str, object]
) -> None:
    """A claim inside a savepoint (Django's nested atomic(), get_or_create()) is undone with
    it; the transaction goes on."""
    install_layouts(pg_kwargs)
    conn = connect()
    with conn.transaction():
        with conn.transaction(force_rollback=True):
            seen = _ids(conn, 10)
        repeated = set(seen) & set(_ids(conn, 10))
    assert not repeated, f"{len(repeated)} of the {len(seen)} IDs read before the rollback repeat"


def test_an_app_claim_never_takes_a_generator_id_of_a_rolled_back_database_claim(
    connect: Connect, pg_kwargs: dict[str, object], postgres_url: str
) -> None:
    """The app side takes generator ids from the same counter row, which the rollback put back:
    it passes the database side's high-water."""
    install_layouts(pg_kwargs)
    conn = connect()
    with conn.transaction(force_rollback=True):
        (seen,) = _ids(conn, 1)
    app = DbApiDatabase("postgresql", postgres_url)
    try:
        assigned = DecimalSource(app).acquire(DECIMAL).values
    finally:
        app.close()
    assert (assigned["launch_id"], assigned["generator_id"]) != _generator(seen)


@pytest.mark.parametrize("database_first", [True, False], ids=["database-first", "app-first"])
def test_app_and_database_claims_of_one_launch_take_different_generator_ids(
    connect: Connect, pg_kwargs: dict[str, object], postgres_url: str, database_first: bool
) -> None:
    """Both sides count the same row 'generator:<launch>' and must read a value the same way."""
    install_layouts(pg_kwargs)
    conn = connect()
    app = DbApiDatabase("postgresql", postgres_url)
    try:
        claims: list[tuple[int, int]] = []
        for side in ("database", "app") if database_first else ("app", "database"):
            if side == "database":
                claims.append(_generator(_ids(conn, 1)[0]))
            else:
                assigned = DecimalSource(app).acquire(DECIMAL).values
                claims.append((assigned["launch_id"], assigned["generator_id"]))
    finally:
        app.close()
    assert claims[0] != claims[1], f"both sides took generator id {claims[0]}"


def test_a_claim_never_waits_for_another_sessions_open_transaction(
    connect: Connect, pg_kwargs: dict[str, object]
) -> None:
    """A session's first decimal ID inside a transaction it keeps open (a long request, an idle
    in transaction client) takes a block from the allocator, not the counter row's lock: every
    other session's first decimal ID goes on (lock_timeout bounds the test, were it to wait)."""
    install_layouts(pg_kwargs)
    holder, other = connect(), connect()
    with holder.transaction(force_rollback=True):
        _ids(holder, 1)
        other.execute("SET lock_timeout = '3s'")
        try:
            _ids(other, 1)
        except psycopg.errors.LockNotAvailable as error:
            pytest.fail(f"another session's decimal claim waited on the open transaction: {error}")


def test_resets_take_blocks_of_one_generator_id_and_never_repeat(
    connect: Connect, pg_kwargs: dict[str, object]
) -> None:
    """Every DISCARD ALL drops the backend's temporary sequence; its next decimal ID takes a
    new block of 10,000 counters from the allocator, under the same generator id (two at
    most: the allocator may move on meanwhile, as it does once per generator id and launch)."""
    install_layouts(pg_kwargs)
    conn = connect(prepare_threshold=None)  # DISCARD ALL drops prepared statements
    seen = _ids(conn, 3)
    for _ in range(200):
        conn.execute("DISCARD ALL")
        seen += _ids(conn, 3)
    used = {_generator(value) for value in seen}
    assert len(used) <= 2, f"200 resets used {len(used)} of the launch's generator ids"
    assert len(set(seen)) == len(seen)


@pytest.mark.skipif(pgbouncer.binary() is None, reason=NEEDS["pgbouncer"])
def test_clients_of_a_session_mode_pgbouncer_share_one_generator_id(
    pg_kwargs: dict[str, object], postgres_url: str
) -> None:
    """100 clients through a session-mode PgBouncer that runs DISCARD ALL between them, on two
    server connections: each client's IDs come from a fresh block, and the 100 resets do not
    take 100 generator ids."""
    install_layouts(pg_kwargs)
    running = pgbouncer.start(DbUrl.parse(postgres_url), "session", "DISCARD ALL", pool_size=2)
    seen: list[int] = []
    try:
        kwargs = running.url.psycopg_kwargs()
        for _ in range(100):
            with psycopg.connect(**kwargs, autocommit=True, prepare_threshold=None) as conn:
                seen += _ids(conn, 10)
    finally:
        running.stop()
    used = {_generator(value) for value in seen}
    assert len(set(seen)) == len(seen) == 1000
    assert len(used) <= 2, f"100 pooler resets used {len(used)} generator ids"


def test_backends_and_app_processes_never_share_a_generator_id_across_rollbacks_and_moves(
    connect: Connect, pg_kwargs: dict[str, object], postgres_url: str
) -> None:
    """Four backends (a reset before every transaction, every third one rolled back) and two
    app claimers at once, in five phases; before each, the allocator skips to 8 blocks before
    its generator id's end, so the backends move to new generator ids, some of those moves in
    transactions that roll back."""
    install_layouts(pg_kwargs)
    admin = connect()
    database_ids: list[int] = []
    app_claims: list[tuple[int, int]] = []

    def work(index: int) -> None:
        if index >= 4:
            app = DbApiDatabase("postgresql", postgres_url)
            try:
                for _ in range(6):
                    assigned = DecimalSource(app).acquire(DECIMAL).values
                    app_claims.append((assigned["launch_id"], assigned["generator_id"]))
            finally:
                app.close()
            return
        conn = connect(prepare_threshold=None)
        for round_no in range(6):
            conn.execute("DISCARD ALL")
            with conn.transaction(force_rollback=round_no % 3 == 2):
                database_ids.extend(_ids(conn, 20))

    phases: list[set[tuple[int, int]]] = []  # the generator ids each phase issued under
    for _ in range(5):
        admin.execute(  # only forward: the block part rises to 92225 at least
            "SELECT setval('idfields.decimal_issued', last_value / 100000 * 100000 "
            "+ GREATEST(last_value % 100000, 92225)) FROM idfields.decimal_issued"
        )
        before = len(database_ids)
        run_in_threads(work, 6)
        phases.append({_generator(value) for value in database_ids[before:]})
    assert len(set(database_ids)) == len(database_ids) == 5 * 4 * 6 * 20
    database_generators = set().union(*phases)
    # The backends moved in every phase after the first (where the database issued no decimal
    # ID before, the first phase's backends issue under its first generator id throughout).
    for number, phase in enumerate(phases[1:], 2):
        assert phase - set().union(*phases[: number - 1]), f"no move in phase {number}"
    assert len(set(app_claims)) == len(app_claims) == 5 * 2 * 6
    shared = database_generators & set(app_claims)
    assert not shared, f"app processes took generator ids the backends issued under: {shared}"


def test_an_app_pinned_to_an_older_launch_never_takes_a_database_generator_id_of_it(
    empty_database: DbUrl, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The allocator remembers one launch. A database claim in launch 1 rolls back (its counter
    row increment with it), launch 2 is recorded, and the backends move to it: an app process
    still pinned to launch 1 (IDFIELDS_LAUNCH_ID, a deploy rolling out) finds launch 1's
    database-side generator id in the counter row, which the backends covered before moving."""
    kwargs = empty_database.psycopg_kwargs()
    with psycopg.connect(**kwargs, autocommit=True) as admin:
        admin.execute(sql.load(sql.VERSION).encode())
        admin.execute("INSERT INTO public.idfields_launch VALUES (1, 'one', now())")
        with (
            psycopg.connect(**kwargs, autocommit=True) as conn,
            conn.transaction(force_rollback=True),
        ):
            (rolled_back,) = _ids(conn, 1)
        admin.execute("INSERT INTO public.idfields_launch VALUES (2, 'two', now())")
        issued = {_generator(rolled_back)}
        for _ in range(2):  # the first covers launch 1's row, the second moves to launch 2
            with psycopg.connect(**kwargs, autocommit=True) as conn:
                issued |= {_generator(value) for value in _ids(conn, 1)}
    assert (2, 0) in issued, f"the backends did not move to launch 2: {issued}"
    monkeypatch.setenv(LAUNCH_ENV, "1")
    app = DbApiDatabase("postgresql", str(empty_database))
    try:
        assigned = DecimalSource(app).acquire(DECIMAL).values
    finally:
        app.close()
    claim = (assigned["launch_id"], assigned["generator_id"])
    assert claim not in issued, f"the app took {claim}, which the backends issued under"


def test_an_app_claim_that_may_not_read_the_allocator_is_refused_naming_the_grant(
    empty_database: DbUrl,
) -> None:
    """The install grants SELECT on the allocator to PUBLIC; where that was revoked, an app
    claim cannot know what the backends issue under and refuses rather than guess."""
    role = f"idfields_decimal_{secrets.token_hex(3)}"
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as admin:
        admin.execute(sql.load(sql.VERSION).encode())
        admin.execute("INSERT INTO public.idfields_launch VALUES (1, 'one', now())")
        admin.execute("REVOKE SELECT ON SEQUENCE idfields.decimal_issued FROM PUBLIC")
        name = pgsql.Identifier(role)
        admin.execute(pgsql.SQL("CREATE ROLE {} LOGIN").format(name))
        admin.execute(
            pgsql.SQL("GRANT SELECT, INSERT, UPDATE ON idfields_counter TO {}").format(name)
        )
        admin.execute(pgsql.SQL("GRANT SELECT ON idfields_launch TO {}").format(name))
        app = DbApiDatabase("postgresql", str(dataclasses.replace(empty_database, user=role)))
        try:
            grant = r"GRANT SELECT ON SEQUENCE idfields\.decimal_issued"
            with pytest.raises(NodeError, match=grant):
                DecimalSource(app).acquire(DECIMAL)
        finally:
            app.close()
            drop_role(admin, role)
