"""Leases under a rolling deploy and a database outage, on a real PostgreSQL.

Leases keyed by layout name alone would let a layout changed under its name lease nodes whose
IDs overlap the old layout's (here 1,000 duplicates of 3,000, deterministically); a lost lease
followed by one failed re-acquire (``ConnectionError``) must not wedge the generator for good
(``NodeError: the lease on node None``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from databases import DbUrl

from idfields.coordination import Database, LeaseSource, Result, list_leases
from idfields.errors import NodeError
from idfields.generators import IdGenerator, make_generator
from idfields.layouts import Layout, Node, Timestamp
from idfields.layouts import Sequence as SequenceField
from idfields.sqlalchemy_ext import SQLAlchemyDatabase, metadata

pytestmark = pytest.mark.core

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
# The same name, packed differently: NEW's node 2 holds OLD's node 1 IDs (2 << 20 == 1 << 21).
OLD = Layout("orders", [Timestamp(41, unit="ms", epoch=EPOCH), Node(1), SequenceField(21)])
NEW = Layout(
    "orders", [Timestamp(41, unit="ms", epoch=EPOCH), Node(2, maximum=2), SequenceField(20)]
)


class FakeClock:
    def __init__(self) -> None:
        self.now = time.time_ns()

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += round(seconds * 1e9)


class BreakableDatabase:
    """The real adapter, whose connection a test can have the server terminate just before a
    chosen statement (``pg_terminate_backend``): the statement then fails as in an outage."""

    def __init__(self, inner: SQLAlchemyDatabase, admin_url: str) -> None:
        self._inner = inner
        self._admin_url = admin_url
        self.break_before: str | None = None

    @property
    def vendor(self) -> str:
        return self._inner.vendor

    def execute(self, sql: str, params: Sequence[object] = ()) -> Result:
        if self.break_before is not None and sql.startswith(self.break_before):
            self.break_before = None
            with psycopg.connect(self._admin_url, autocommit=True) as admin:
                terminated = admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                ).fetchone()
                assert terminated is not None and terminated[0] >= 1
        return self._inner.execute(sql, params)

    def atomic(self) -> AbstractContextManager[None]:
        return self._inner.atomic()


def coordination(url: str) -> Iterator[SQLAlchemyDatabase]:
    engine = sa.create_engine(url)
    metadata.create_all(engine)
    database = SQLAlchemyDatabase(engine)
    yield database
    database.dispose()
    engine.dispose()


@pytest.fixture
def pg(fresh_database: Callable[[str], str]) -> Iterator[tuple[SQLAlchemyDatabase, str]]:
    url = fresh_database("postgresql")
    for database in coordination(DbUrl.parse(url).sqlalchemy_url()):
        yield database, url


@pytest.fixture(
    params=[
        pytest.param("postgresql", marks=pytest.mark.postgres),
        pytest.param("mysql", marks=pytest.mark.mysql),
        "sqlite",
    ]
)
def any_database(
    request: pytest.FixtureRequest, fresh_database: Callable[[str], str], tmp_path: Path
) -> Iterator[SQLAlchemyDatabase]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'leases.sqlite3'}"
    else:
        url = DbUrl.parse(fresh_database(request.param)).sqlalchemy_url()
    yield from coordination(url)


def leased(database: Database, layout: Layout, clock: FakeClock) -> IdGenerator:
    return make_generator(layout, LeaseSource(database, ttl_s=3, clock=clock), clock=clock)


def test_a_layout_changed_under_its_name_is_refused_while_the_old_one_is_live(
    any_database: SQLAlchemyDatabase,
) -> None:
    database = any_database
    clock = FakeClock()  # one tick for all: any overlap of the node spaces is a duplicate
    old_processes = [leased(database, OLD, clock) for _ in range(2)]  # both nodes of OLD
    ids = [value for generator in old_processes for value in generator.take(1000)]
    rolled_out = leased(database, NEW, clock)
    refusal = ""
    try:
        ids += rolled_out.take(1000)
    except NodeError as error:
        refusal = str(error)
    assert len(ids) - len(set(ids)) == 0
    assert "differs from the layout of that name that live processes use" in refusal
    assert "Keep the old layout until every process using it has stopped" in refusal
    for generator in old_processes:  # the deploy finishes: the old processes exit
        generator.close()
    ids += rolled_out.take(1000)  # fenced after the old layout's last IDs
    assert len(ids) - len(set(ids)) == 0
    rolled_out.close()


@pytest.mark.postgres
def test_a_lost_lease_and_a_dropped_connection_back_off_then_recover(
    pg: tuple[SQLAlchemyDatabase, str],
) -> None:
    inner, url = pg
    database = BreakableDatabase(inner, url)
    clock = FakeClock()
    generator = leased(database, "snowflake", clock)  # type: ignore[arg-type]
    first = generator()
    [lost] = generator.node.values()  # type: ignore[union-attr]
    with psycopg.connect(url, autocommit=True) as other:  # another process took the node
        other.execute("UPDATE idfields_node_lease SET holder = 'other:1' WHERE node = %s", [lost])
    clock.advance(1.5)  # past the renewal time (a third of the ttl)
    database.break_before = "SELECT layout, node"  # the claim's read hits a dropped connection
    with pytest.raises(sa.exc.OperationalError):
        generator()
    with pytest.raises(NodeError, match=r"next attempt is in 0\.100 s"):
        generator()  # backing off: the database is not asked
    clock.advance(0.1)
    second = generator()  # recovered on a new connection and a new node, no close() needed
    assert second > first
    assert generator.node != {"node": lost}  # type: ignore[attr-defined]
    generator.close()


class RacingDatabase:
    """The real adapter, which runs ``race`` once, right after the first read of lease rows: a
    process of another layout claiming between a claim's look at the table and its own claim."""

    def __init__(self, inner: SQLAlchemyDatabase, race: Callable[[], object]) -> None:
        self._inner = inner
        self._race: Callable[[], object] | None = race

    @property
    def vendor(self) -> str:
        return self._inner.vendor

    def execute(self, sql: str, params: Sequence[object] = ()) -> Result:
        result = self._inner.execute(sql, params)
        if self._race is not None and sql.startswith("SELECT layout, node"):
            race, self._race = self._race, None
            race()
        return result

    def atomic(self) -> AbstractContextManager[None]:
        return self._inner.atomic()


def test_a_layout_claiming_under_the_same_name_meanwhile_is_seen_after_the_claim(
    any_database: SQLAlchemyDatabase,
) -> None:
    clock = FakeClock()
    old = leased(any_database, OLD, clock)
    ids: list[int] = []
    racing = RacingDatabase(any_database, lambda: ids.extend(old.take(1000)))
    rolled_out = leased(racing, NEW, clock)
    with pytest.raises(NodeError, match="differs from the layout of that name"):
        rolled_out.take(1000)
    held = [(row.layout, row.node) for row in list_leases(any_database, "orders") if row.live]
    assert old.node is not None
    assert held == [(OLD.lease_key, old.node["node"])]  # the refused claim gave its node back
    ids += old.take(1000)
    assert len(ids) == 2000 and len(set(ids)) == 2000
    old.close()
