"""The lease rules, written twice (the app's in ``idfields.coordination._leases``, the database
backends' in PL/pgSQL), run from one table of scenarios: the lease rows and durable fences a claim
finds, and what claiming does for an app process (a ``LeaseSource``) and for a database backend
(``idfields.next_<layout>_at(tick)``), on a real PostgreSQL; and a table of the coordination
database's epochs (L10, L11): what a claim does after the database may have lost its recent
past, by the epoch rows it finds.

Each scenario's layout has two nodes; node 0 is always held by a live app process, so the
outcome is the fate of node 1: claimed (and the earliest millisecond the claimer may issue in),
or no free node. Offsets are milliseconds from the clock both claimers are given. Where the two
implementations answer differently, the table says so in its two columns, and why.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import databases
import psycopg
import pytest
from databases import DbUrl
from dbapi_database import DbApiDatabase

from idfields import NodeError, sql
from idfields.coordination import LeaseSource, _identity
from idfields.layouts import Layout, Node, Sequence, Timestamp, get_layout
from tests.pg.conftest import TABLES, install_layouts

MS = 1_000_000
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
EPOCH_MS = int(EPOCH.timestamp() * 1000)
LIVE_APP = "host-elsewhere:4242:boot:1:feedface"  # another host's process: alive (L3)
DEAD_BACKEND = "pg:2147483000:"  # a backend pid no server has: provably gone (L3)
THIS_BACKEND = "this backend"  # replaced by the asking backend's own holder (D3)
NO_NODE = None


@dataclass(frozen=True)
class Scenario:
    """Node 1's lease row (None: never used) and durable fence, and each claimer's outcome:
    the earliest millisecond (offset) it issues in on node 1, or NO_NODE."""

    name: str
    holder: str | None
    expires: int = 0
    fence: int | None = None
    app: int | None = 0
    backend: int | None = 0
    why: str = ""


SCENARIOS = [
    Scenario("never used", None),
    Scenario("lapsed app row", LIVE_APP, expires=-5_000),
    Scenario("released behind the clock", "", expires=-100),
    Scenario("live app row", LIVE_APP, expires=30_000, app=NO_NODE, backend=NO_NODE),
    Scenario(
        "released ahead of the clock",
        "",
        expires=400,
        app=401,
        backend=NO_NODE,
        why="an app claims a released row whose fence is within its run-ahead (L4); a backend "
        "waits for the row's expiry",
    ),
    Scenario("durable fence ahead, within the window", None, fence=500, app=500, backend=500),
    Scenario(
        "durable fence past the window",
        None,
        fence=5_000,
        app=NO_NODE,
        backend=NO_NODE,
        why="a claim skips a node fenced further ahead than the run-ahead (L5, D5, D7)",
    ),
    Scenario(
        "live row of a dead backend",
        DEAD_BACKEND,
        expires=600,
        app=601,
        backend=NO_NODE,
        why="an app proves the backend gone (L3) and claims behind its expiry; a backend "
        "leaves an unexpired row of another pid",
    ),
    Scenario(
        "live row of the asking backend",
        THIS_BACKEND,
        expires=2_000,
        app=NO_NODE,
        backend=250,
        why="the backend takes its own row back after the limit its promise gave, the promise "
        "less the margin (D2, D3); to an app the backend is alive",
    ),
]


@pytest.fixture
def layout(pg_kwargs: dict[str, object]) -> Layout:
    """A two-node layout of its own, its database functions installed."""
    name = f"scenario_{secrets.token_hex(4)}"
    made = Layout(name, [Timestamp(41, unit="ms", epoch=EPOCH), Node(1), Sequence(12)])
    install_layouts(pg_kwargs, made)
    return made


@pytest.fixture
def admin(pg_kwargs: dict[str, object]) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(**pg_kwargs, autocommit=True) as conn:
        yield conn


def clock_ms(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT idfields.clock_ms()").fetchone()
    assert row is not None
    return int(row[0])


def set_up(
    admin: psycopg.Connection[Any], layout: Layout, scenario: Scenario, now: int, me: str
) -> None:
    """Node 0 held live by another app; node 1 as the scenario says; node 1's durable fence."""
    rows = [(0, LIVE_APP, now + 60_000)]
    if scenario.holder is not None:
        holder = me if scenario.holder == THIS_BACKEND else scenario.holder
        rows.append((1, holder, now + scenario.expires))
    for node, holder, expires in rows:
        admin.execute(
            "INSERT INTO public.idfields_node_lease "
            "(layout, node, holder, acquired_at_ms, expires_at_ms) VALUES (%s, %s, %s, %s, %s)",
            [layout.lease_key, node, holder, now - 60_000, expires],
        )
    if scenario.fence is not None:
        admin.execute(
            "SELECT setval(idfields.fence_sequence(idfields.lease_lock_key(%s), 1), %s)",
            [layout.lease_key, now + scenario.fence],
        )


def app_claims(layout: Layout, postgres_url: str, now: int) -> tuple[int, int] | None:
    """(node, earliest ms it issues in) of an app process's claim, or None: no free node."""
    database = DbApiDatabase("postgresql", postgres_url)
    try:
        lease = LeaseSource(database, clock=lambda: now * MS).acquire(layout)
        if lease.release is not None:
            lease.release(0)
    except NodeError as error:
        assert "no free node" in str(error)
        return None
    finally:
        database.close()
    earliest = max(now, lease.not_before_ns // MS + 1)  # it issues after its fence (L1, L4)
    return int(lease.values["node"]), earliest


def backend_claims(
    conn: psycopg.Connection[Any], layout: Layout, now: int
) -> tuple[int, int] | None:
    """(node, ms of its first ID) of a database backend's claim, or None: no free node."""
    try:
        row = conn.execute(
            f"SELECT idfields.next_{layout.name}_at(%s)",
            [now - EPOCH_MS],
        ).fetchone()
    except psycopg.errors.ConfigurationLimitExceeded as error:  # 53400
        assert "no free" in str(error)
        return None
    assert row is not None
    values = layout.decode(int(row[0])).values
    return int(values["node"]), EPOCH_MS + int(values["timestamp"])


def expected(outcome: int | None, now: int) -> tuple[int, int] | None:
    return None if outcome is NO_NODE else (1, now + outcome)


def agrees(got: tuple[int, int] | None, want: tuple[int, int] | None, now: int) -> bool:
    """The node claimed, issuing no earlier than the rules allow, and no later than they need
    (give or take a durable fence another layout sharing the node's fence sequence raised)."""
    if got is None or want is None:
        return got == want
    return got[0] == want[0] and want[1] <= got[1] <= max(want[1], now) + 300


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_each_lease_scenario_through_both_implementations(
    scenario: Scenario,
    layout: Layout,
    admin: psycopg.Connection[Any],
    pg_kwargs: dict[str, object],
    postgres_url: str,
) -> None:
    with psycopg.connect(**pg_kwargs, autocommit=True) as backend:
        pid = backend.execute("SELECT pg_backend_pid()").fetchone()
        assert pid is not None
        now = clock_ms(admin)
        set_up(admin, layout, scenario, now, f"pg:{pid[0]}:")
        app = app_claims(layout, postgres_url, now)
        admin.execute(  # the app's claim undone: the backend finds the rows as set up
            "DELETE FROM public.idfields_node_lease WHERE layout = %s", [layout.lease_key]
        )
        set_up(admin, layout, scenario, now, f"pg:{pid[0]}:")
        database = backend_claims(backend, layout, now)
    outcomes = {"app (Python)": app, "backend (PL/pgSQL)": database}
    wanted = {
        "app (Python)": expected(scenario.app, now),
        "backend (PL/pgSQL)": expected(scenario.backend, now),
    }
    wrong = {
        who: (got, wanted[who])
        for who, got in outcomes.items()
        if not agrees(got, wanted[who], now)
    }
    assert not wrong, f"{scenario.name}: (got, wanted) relative to {now}: {wrong}"


# The database's epochs (L10, L11): what a claim does after the coordination database may have
# lost its recent past, by the rows it finds in idfields_counter. Offsets are milliseconds from
# the server's clock; the server's own start and identity fill in the rows.
WAITS = "waits"


@dataclass(frozen=True)
class EpochScenario:
    """The epoch rows a claim finds (None: none), and each claimer's outcome: the earliest
    millisecond (offset) it issues in, or WAITS for the grace."""

    name: str
    identity: str | None  # "own", or another database's identity
    since: int | None = None  # offset; None: the server's start
    grace: int = 0  # offset; 0: no grace recorded
    app: int | str = 0
    backend: int | str = 0
    reset: int = 0  # the recorded statistics' reset time, in us off the server's


OTHER = "6000000000000000000/1/1"
EPOCH_SCENARIOS = [
    EpochScenario("first record", None),
    EpochScenario("the identity recorded, nothing lost", "own"),
    EpochScenario("another identity recorded: changed", OTHER, app=WAITS, backend=WAITS),
    EpochScenario("a grace running", "own", since=-5_000, grace=30_000, app=WAITS, backend=WAITS),
    EpochScenario("a grace ended", "own", since=-30_000, grace=-100),
    EpochScenario("recorded before a clean restart", "own", since=-(10**9)),
    # Crash recovery the server's start does not show (one backend's crash, or a crash and a
    # clean restart since the epoch was recorded), at the server's reset time: long enough ago
    # here that every lease it may have lost has ended (tests/pg/test_unseen_recoveries.py
    # waits after a recent one).
    EpochScenario("statistics reset since, long ago", "own", reset=-1),
    EpochScenario("statistics reset, then a clean restart", "own", since=-(10**9), reset=-1),
]


@pytest.fixture
def scratch(postgres_url: str) -> Iterator[DbUrl]:
    """A database of its own (its epoch rows are its own), with the tables and functions."""
    with databases.scratch_database(postgres_url) as url:
        target = DbUrl.parse(url)
        with psycopg.connect(**target.psycopg_kwargs(), autocommit=True) as conn:
            conn.execute(TABLES)
            conn.execute(sql.load(sql.VERSION).encode())
        yield target


def epoch_rows(conn: psycopg.Connection[Any], scenario: EpochScenario) -> tuple[int, bool]:
    """The scenario's rows written; (the server's clock, whether its start counts as a crash
    recovery)."""
    now, started, reset, recovered, identity = conn.execute(_identity._CURRENT).fetchone() or ()
    if scenario.identity is not None:
        name = identity if scenario.identity == "own" else scenario.identity
        if isinstance(name, bytes):
            name = name.decode()
        since = started if scenario.since is None else now + scenario.since
        grace = 0 if not scenario.grace else now + scenario.grace
        conn.execute(
            "INSERT INTO idfields_counter (name, value) VALUES (%s, %s), (%s, %s), (%s, %s)",
            [
                *(f"epoch:{name}", since, f"identity:{name}", grace),
                *(f"reset:{name}", reset + scenario.reset),
            ],
        )
    return int(now), bool(recovered)


def app_claims_in(url: DbUrl, now: int) -> tuple[int, int] | str:
    database = DbApiDatabase("postgresql", str(url))
    try:
        lease = LeaseSource(database, clock=lambda: now * MS).acquire(get_layout("snowflake"))
    except NodeError as error:
        assert "restarted" in str(error) or "changed" in str(error), error
        return WAITS
    finally:
        database.close()
    return int(lease.values["node"]), max(now, lease.not_before_ns // MS + 1)


def backend_claims_in(url: DbUrl, now: int) -> tuple[int, int] | str:
    with psycopg.connect(**url.psycopg_kwargs(), autocommit=True) as conn:
        try:
            row = conn.execute("SELECT idfields.next_snowflake_at(%s)", [now - EPOCH_MS]).fetchone()
        except psycopg.errors.CannotConnectNow:  # 57P03
            return WAITS
    assert row is not None
    values = get_layout("snowflake").decode(int(row[0])).values
    return int(values["node"]), EPOCH_MS + int(values["timestamp"])


@pytest.mark.parametrize("scenario", EPOCH_SCENARIOS, ids=[s.name for s in EPOCH_SCENARIOS])
def test_each_epoch_scenario_through_both_implementations(
    scenario: EpochScenario, scratch: DbUrl
) -> None:
    """Each claimer in a copy of the scenario of its own (the first records what it finds)."""
    claimers = {"app (Python)": app_claims_in, "backend (PL/pgSQL)": backend_claims_in}
    wanted = {"app (Python)": scenario.app, "backend (PL/pgSQL)": scenario.backend}
    wrong = {}
    for who, claims in claimers.items():
        with psycopg.connect(**scratch.psycopg_kwargs(), autocommit=True) as conn:
            conn.execute("DELETE FROM idfields_counter")
            conn.execute("DELETE FROM idfields_node_lease")
            now, recovered = epoch_rows(conn, scenario)
        assert not recovered, "the test server came up through crash recovery: restart it"
        got, want = claims(scratch, now), wanted[who]
        if got == WAITS or want == WAITS:
            agreed = got == want
        else:
            agreed = isinstance(got, tuple) and now + int(want) <= got[1] <= now + 300
        if not agreed:
            wrong[who] = (got, want, now)
    assert not wrong, f"{scenario.name}: (got, wanted, clock): {wrong}"
