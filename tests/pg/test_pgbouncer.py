"""Database-side IDs through a real PgBouncer: 8 clients x 50,000 IDs, zero repeats, in
transaction mode and in session mode with the reset queries poolers use (DISCARD ALL, and
DISCARD TEMP, which a position not tied to its claim would turn into repeated IDs)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from databases import DbUrl
from needs import NEEDS

from tests.pg import pgbouncer
from tests.pg.conftest import run_in_threads

CLIENTS = 8
IDS_PER_CLIENT = 50_000

pytestmark = pytest.mark.skipif(pgbouncer.binary() is None, reason=NEEDS["pgbouncer"])


@pytest.fixture(
    params=[
        ("transaction", "DISCARD ALL"),
        ("session", "DISCARD ALL"),
        ("session", "DISCARD TEMP"),
    ],
    ids=["transaction", "session-discard-all", "session-discard-temp"],
)
def bouncer(
    request: pytest.FixtureRequest, postgres_url: str, pg_kwargs: dict[str, object]
) -> Iterator[Any]:
    """A PgBouncer in front of the session database (pg_kwargs: functions installed)."""
    pool_mode, reset = request.param
    running = pgbouncer.start(DbUrl.parse(postgres_url), pool_mode, reset)
    yield running
    running.stop()


def test_eight_clients_through_pgbouncer_never_repeat(bouncer: Any) -> None:
    """Each client reconnects every 5,000 IDs (so session mode resets its backend between
    clients) and asks for 1,000 IDs a statement, in transactions of one statement."""
    found: list[list[int]] = [[] for _ in range(CLIENTS)]
    kwargs = bouncer.url.psycopg_kwargs()

    def client(index: int) -> None:
        for _ in range(IDS_PER_CLIENT // 5_000):
            # prepare_threshold=None: no server-side prepared statements (transaction mode).
            with psycopg.connect(**kwargs, autocommit=True, prepare_threshold=None) as conn:
                for _ in range(5):
                    rows = conn.execute(
                        "SELECT idfields.next_snowflake() FROM generate_series(1, 1000)"
                    ).fetchall()
                    found[index] += [row[0] for row in rows]

    run_in_threads(client, CLIENTS)
    ids = [value for chunk in found for value in chunk]
    assert len(ids) == CLIENTS * IDS_PER_CLIENT
    assert len(ids) - len(set(ids)) == 0, bouncer.log()[-2000:]
    for chunk in found:  # each statement's IDs increase
        for start in range(0, len(chunk), 1000):
            part = chunk[start : start + 1000]
            assert part == sorted(part)
