"""A database with the idfields tables and SQL functions installed, reached with psycopg; and
empty databases for the tests that install or drop the functions themselves."""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import databases
import needs
import psycopg
import pytest
from databases import DbUrl
from psycopg import sql as pgsql
from schema_ddl import create_tables

from idfields import sql
from idfields.layouts import SNOWFLAKE_EPOCH, Layout, Node, Sequence, Timestamp
from idfields.sql.layouts import render_layout_function
from tests.pg.sample_layouts import LAYOUTS

TABLES = ";\n".join(create_tables("postgresql")) + ";"
PRIVILEGES = Path(__file__).parents[2] / "docs" / "how-to" / "privileges.md"

Connect = Callable[..., "psycopg.Connection[tuple[Any, ...]]"]


def run_in_threads(work: Callable[[int], None], count: int) -> None:
    """Run ``work(0)`` .. ``work(count - 1)`` in threads at once; fail if any of them raised."""
    errors: list[BaseException] = []

    def guarded(index: int) -> None:
        try:
            work(index)
        except BaseException as error:  # surfaced below
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors


@pytest.fixture(scope="session")
def pg_kwargs(postgres_url: str) -> dict[str, object]:
    kwargs = DbUrl.parse(postgres_url).psycopg_kwargs()
    with psycopg.connect(**kwargs, autocommit=True) as conn:
        conn.execute(TABLES)
        conn.execute(sql.load(sql.VERSION))
    return kwargs


@pytest.fixture(scope="session")
def native_kwargs(postgres_url: str) -> Iterator[dict[str, object]]:
    """A second scratch database whose idfields functions run the C extension idfields_native
    (pgext/): the tables, the functions, the extension and the sample user layouts. Skipped
    when the server lacks the extension, failed instead under IDFIELDS_REQUIRE_NATIVE=1."""
    kwargs = DbUrl.parse(postgres_url).psycopg_kwargs()
    with psycopg.connect(**kwargs, autocommit=True) as conn:
        available = conn.execute(
            "SELECT count(*) FROM pg_available_extensions WHERE name = 'idfields_native'"
        ).fetchone()
    if available != (1,):
        needs.skip("native", "IDFIELDS_REQUIRE_NATIVE")
    with databases.scratch_database(postgres_url) as url:
        native = DbUrl.parse(url).psycopg_kwargs()
        with psycopg.connect(**native, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION idfields_native")
            conn.execute(TABLES)
            conn.execute(sql.load(sql.VERSION).encode())  # wires the extension in at its end
        install_layouts(native, *LAYOUTS)
        yield native


#: Run a test on both hot paths: PL/pgSQL (the session database) and C (:func:`native_kwargs`).
BOTH_PATHS = pytest.mark.parametrize("db_kwargs", ["plpgsql", "native"], indirect=True)


@pytest.fixture
def db_kwargs(request: pytest.FixtureRequest, pg_kwargs: dict[str, object]) -> dict[str, object]:
    """The database :func:`connect` reaches: the session's, or the native one under
    :data:`BOTH_PATHS`."""
    if getattr(request, "param", "plpgsql") == "native":
        return dict(request.getfixturevalue("native_kwargs"))
    return pg_kwargs


@pytest.fixture(autouse=True)
def _idfields_tables(request: pytest.FixtureRequest) -> None:
    """The tables and functions again before each test: the session database is shared with
    suites whose ``metadata.drop_all()`` or fixture teardown drops them."""
    if "pg_kwargs" in request.fixturenames:
        with psycopg.connect(**request.getfixturevalue("pg_kwargs"), autocommit=True) as conn:
            install_if_missing(conn)


def install_if_missing(conn: psycopg.Connection[Any]) -> None:
    """The idfields tables, and the functions unless installed (module fixtures that add user
    layouts call it first: they run before the per-test fixture above)."""
    conn.execute(TABLES)
    row = conn.execute("SELECT to_regnamespace('idfields')").fetchone()
    if row is None or row[0] is None:  # another suite's teardown dropped the functions
        conn.execute(sql.load(sql.VERSION))


def as_a_database_of_its_own(copy: psycopg.Connection[Any]) -> None:
    """A copy (pg_dump, a template) that never stands in for its source: its backends wait out
    a grace first (L10), unless its history of the source's identities is dropped, as the
    high-availability how-to says for copies that issue alone."""
    recorded = copy.execute(
        "SELECT count(*) FROM idfields_counter WHERE name LIKE 'identity:%'"
    ).fetchone()
    if recorded != (0,):  # the source's identity: the copy is another database
        with pytest.raises(psycopg.errors.CannotConnectNow):
            copy.execute("SELECT idfields.next_snowflake()")
    copy.execute(
        "DELETE FROM idfields_counter "
        "WHERE name LIKE 'identity:%' OR name LIKE 'epoch:%' OR name LIKE 'reset:%'"
    )


def install_layouts(pg_kwargs: dict[str, object], *layouts: Layout) -> None:
    """For a module fixture: the tables and functions (:func:`install_if_missing`), these user
    layouts' functions, and launch 1 (DecimalId needs one)."""
    with psycopg.connect(**pg_kwargs, autocommit=True) as conn:
        install_if_missing(conn)
        for layout in layouts:
            conn.execute(render_layout_function(layout)[0].encode())
        conn.execute(
            "INSERT INTO public.idfields_launch VALUES (1, 'test', now()) ON CONFLICT DO NOTHING"
        )


@pytest.fixture
def connect(db_kwargs: dict[str, object]) -> Iterator[Connect]:
    opened: list[psycopg.Connection[tuple[Any, ...]]] = []

    def _connect(**extra: object) -> psycopg.Connection[tuple[Any, ...]]:
        conn = psycopg.connect(**{**db_kwargs, "autocommit": True, **extra})
        opened.append(conn)
        return conn

    yield _connect
    for conn in opened:
        conn.close()


@pytest.fixture
def counted(connect: Connect) -> psycopg.Connection[Any]:
    """A connection whose function calls count in pg_stat_user_functions."""
    return connect(options="-c track_functions=all -c stats_fetch_consistency=none")


def function_calls(conn: psycopg.Connection[Any], function: str | None = None) -> int:
    """How often ``idfields.<function>`` (None: any function of schema idfields) ran in the
    sessions of a :func:`counted` connection."""
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT 1")  # the flush happens at this transaction's end
    row = conn.execute(
        "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions "
        "WHERE schemaname = 'idfields' AND funcname = coalesce(%s, funcname)",
        [function],
    ).fetchone()
    return int(row[0])


def one_id(conn: psycopg.Connection[Any], function: str) -> int:
    query = pgsql.SQL("SELECT idfields.{}()").format(pgsql.Identifier(function))
    return int(conn.execute(query).fetchone()[0])


def end_window(conn: psycopg.Connection[Any], layout: str) -> None:
    """As the owner: end the session's window of ``layout`` at its last ID (as when the clock
    reaches the limit), so the next ID takes the slow path."""
    conn.execute(
        pgsql.SQL("SELECT setval({}::regclass, pg_sequence_last_value({}::regclass))").format(
            pgsql.Literal(f'pg_temp."idfields:{layout}"'),
            pgsql.Literal(f"pg_temp.idfields_{layout}"),
        )
    )


def documented_grants() -> str:
    """The application role's grant block of the privileges page, for role ``app`` on ``mydb``."""
    text = PRIVILEGES.read_text(encoding="utf-8")
    section = text[text.index("## The application role") :]
    match = re.search(r"```sql\n(GRANT .*?)```", section, re.DOTALL)
    assert match is not None, "the privileges page lists the application role's grants"
    return match.group(1)


def grant_as_documented(admin: psycopg.Connection[Any], role: str, database: str) -> None:
    script = documented_grants().replace(" app;", f" {role};").replace(" app ", f" {role} ")
    admin.execute(script.replace(" mydb ", f" {database} ").encode())


@pytest.fixture
def app_role(connect: Connect, db_kwargs: dict[str, object]) -> Iterator[str]:
    """A login role with exactly the documented grants (PUBLIC keeps its defaults)."""
    admin = connect()
    role = f"idfields_app_{secrets.token_hex(3)}"
    admin.execute(pgsql.SQL("CREATE ROLE {} LOGIN").format(pgsql.Identifier(role)))
    grant_as_documented(admin, role, str(db_kwargs["dbname"]))
    yield role
    drop_role(admin, role)


def terminate(admin: psycopg.Connection[Any], pid: int) -> None:
    """End backend ``pid`` and return once nothing of it is left that a claim reads: its row in
    pg_stat_activity (a holder proven dead) and its locks (a node free). Polled here, as
    ``pg_terminate_backend``'s own wait (its timeout argument) sleeps in steps of 100 ms."""
    assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)
    deadline = time.monotonic() + 30
    while admin.execute(
        "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = %(pid)s) "
        "OR EXISTS (SELECT FROM pg_locks WHERE pid = %(pid)s)",
        {"pid": pid},
    ).fetchone() != (False,):
        assert time.monotonic() < deadline, f"backend {pid} is still there 30 s after its end"
        time.sleep(0.001)  # polling, not a timed assertion


def drop_role(admin: psycopg.Connection[Any], role: str) -> None:
    admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", [role]
    )
    name = pgsql.Identifier(role)
    admin.execute(pgsql.SQL("DROP OWNED BY {}").format(name))
    admin.execute(pgsql.SQL("DROP ROLE {}").format(name))


def single_row_inserts(conn: psycopg.Connection[Any], count: int) -> None:
    """``count`` single-row INSERTs, each its own transaction, into a new temporary table whose
    key is ``DEFAULT idfields.next_snowflake()``; every one must land."""
    table = pgsql.Identifier(f"single_rows_{secrets.token_hex(3)}")
    conn.execute(
        pgsql.SQL("CREATE TEMPORARY TABLE {} (id bigint PRIMARY KEY "
                  "DEFAULT idfields.next_snowflake(), v integer)").format(table)
    )  # fmt: skip
    insert = pgsql.SQL("INSERT INTO {} (v) VALUES (1)").format(table)
    for _ in range(count):
        conn.execute(insert)
    assert conn.execute(pgsql.SQL("SELECT count(*) FROM {}").format(table)).fetchone() == (count,)


def install_as_plain_owner(
    admin: psycopg.Connection[Any], database: str, owner: str, *, reads_stats: bool
) -> None:
    """Install the functions as ``owner``, a new role that is no superuser, with the table grants
    the owner needs (and ``pg_read_all_stats`` when ``reads_stats``); PUBLIC loses TEMPORARY on
    ``database`` (give it back afterwards)."""
    names = {"d": pgsql.Identifier(database), "o": pgsql.Identifier(owner)}
    admin.execute(pgsql.SQL("CREATE ROLE {o}").format(**names))
    for grant in (
        "GRANT CREATE ON DATABASE {d} TO {o}",
        "GRANT SELECT, INSERT, UPDATE ON idfields_node_lease, idfields_counter TO {o}",
        "GRANT SELECT, INSERT ON idfields_launch TO {o}",
        "GRANT TEMPORARY ON DATABASE {d} TO {o}",
        "REVOKE TEMPORARY ON DATABASE {d} FROM PUBLIC",
        *(["GRANT pg_read_all_stats TO {o}"] if reads_stats else []),
    ):
        admin.execute(pgsql.SQL(grant).format(**names))
    admin.execute(pgsql.SQL("SET ROLE {o}").format(**names))
    admin.execute(sql.load(sql.VERSION).encode())
    admin.execute("RESET ROLE")


@pytest.fixture
def empty_database(postgres_url: str) -> Iterator[DbUrl]:
    """A new database on the test server holding only the idfields tables (dropped afterwards):
    installing or dropping the functions there cannot disturb the tests sharing the session
    database."""
    server = DbUrl.parse(postgres_url)
    name = f"idfields_ops_{secrets.token_hex(4)}"
    with psycopg.connect(**server.psycopg_kwargs(), autocommit=True) as admin:
        admin.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
    with psycopg.connect(**server.with_database(name).psycopg_kwargs(), autocommit=True) as conn:
        conn.execute(TABLES)
    try:
        yield server.with_database(name)
    finally:
        with psycopg.connect(**server.psycopg_kwargs(), autocommit=True) as admin:
            admin.execute(
                pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(name))
            )


def fill_but(admin: psycopg.Connection[Any], free: dict[int, int]) -> None:
    """Every snowflake node leased far ahead by an app, except ``free`` (node: expires_at_ms)."""
    admin.execute("DELETE FROM public.idfields_node_lease WHERE layout = 'snowflake'")
    admin.execute(
        "INSERT INTO public.idfields_node_lease (layout, node, holder, acquired_at_ms, "
        "expires_at_ms) SELECT 'snowflake', n, 'app:test', 0, %s "
        "FROM generate_series(0, 1023) n",
        [2**62],
    )
    for node, expires in free.items():
        admin.execute(
            "UPDATE public.idfields_node_lease SET expires_at_ms = %s "
            "WHERE layout = 'snowflake' AND node = %s",
            [expires, node],
        )


@pytest.fixture
def one_node(connect: Connect) -> Iterator[Layout]:
    """A user layout of one node (every claim lands on node 0), its functions installed."""
    layout = Layout(
        f"fence_{secrets.token_hex(4)}",
        [Timestamp(41, epoch=SNOWFLAKE_EPOCH), Node(10, maximum=0), Sequence(12)],
    )
    create, drop = render_layout_function(layout)
    admin = connect()
    admin.execute(create.encode())
    yield layout
    admin.execute(drop.encode())
    admin.execute("DELETE FROM idfields_node_lease WHERE layout = %s", [layout.lease_key])


# The throwaway pair's settings: small, and two-phase commit on (a standby needs at least its
# primary's max_prepared_transactions).
PAIR_SETTINGS = {"shared_buffers": "16MB", "max_prepared_transactions": "4"}


@dataclass(frozen=True)
class Pair:
    """A throwaway primary with the idfields tables and functions, and its hot standby."""

    primary: DbUrl
    standby: DbUrl


@pytest.fixture(scope="session")
def primary_and_standby() -> Iterator[Pair]:
    """Started once per session (initdb, pg_basebackup -R); the standby has replayed the
    install. Skipped without the server binaries, failed instead under
    IDFIELDS_REQUIRE_POSTGRES=1."""
    missing = databases.binaries_missing("initdb", "pg_ctl", "pg_basebackup")
    if missing is not None:
        reason = f"no throwaway primary and hot standby: {missing}: apt-get install postgresql"
        needs.unavailable(reason, "IDFIELDS_REQUIRE_POSTGRES")
    with databases.throwaway_primary_and_standby(PAIR_SETTINGS) as (primary, standby):
        pair = Pair(DbUrl.parse(primary), DbUrl.parse(standby))
        with psycopg.connect(**pair.primary.psycopg_kwargs(), autocommit=True) as conn:
            conn.execute(TABLES)
            conn.execute(sql.load(sql.VERSION).encode())
            conn.execute("INSERT INTO idfields_launch VALUES (1, 'test', now())")
            # The insert position: it covers the commit records (an asynchronous commit
            # returns before they are written out).
            lsn = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()
        wait_for_replay(pair.standby, lsn)
        yield pair


def wait_for_replay(standby: DbUrl, lsn: object, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(**standby.psycopg_kwargs(), autocommit=True) as conn:
        while not conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", lsn).fetchone()[0]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the standby did not replay up to {lsn} in {timeout_s} s")
            time.sleep(0.05)
