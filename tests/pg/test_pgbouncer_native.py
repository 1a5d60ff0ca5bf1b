"""The C path (idfields_native wired) behind a real PgBouncer, in session mode with ``DISCARD
ALL`` between clients and in transaction mode, 4 client threads over 2 server connections,
mixing C calls with the PL/pgSQL bulk form, half the transactions rolled back after their IDs
were read: no ID twice, at most 2 nodes.
"""

from __future__ import annotations

import needs
import psycopg
import pytest
from databases import DbUrl

from tests.pg import pgbouncer
from tests.pg.conftest import run_in_threads

THREADS = 4


def pooled_ids(url: DbUrl, clients_per_thread: int, session: bool) -> list[int]:
    """IDs of every client: a client per connection (session mode), or transactions on one
    connection per thread (transaction mode); each takes 10 IDs on the C path and 5 by
    take_snowflake_ranges(), half of them in a transaction that rolls back."""
    issued: list[list[int]] = [[] for _ in range(THREADS)]

    def work(conn: psycopg.Connection[tuple[int]], mine: list[int], rollback: bool) -> None:
        conn.execute("BEGIN")
        rows = conn.execute("SELECT idfields.next_snowflake() FROM generate_series(1, 10)")
        mine += [int(r[0]) for r in rows.fetchall()]
        rows = conn.execute(
            "SELECT g FROM idfields.take_snowflake_ranges(5) AS r, "
            "generate_series(r.first_id, r.last_id) AS g"
        )
        mine += [int(r[0]) for r in rows.fetchall()]
        conn.execute("ROLLBACK" if rollback else "COMMIT")

    def client(index: int) -> None:
        kwargs = {**url.psycopg_kwargs(), "autocommit": True, "prepare_threshold": None}
        if session:
            for k in range(clients_per_thread):
                with psycopg.connect(**kwargs) as conn:
                    work(conn, issued[index], k % 2 == 0)
        else:
            with psycopg.connect(**kwargs) as conn:
                for k in range(clients_per_thread):
                    work(conn, issued[index], k % 2 == 0)

    run_in_threads(client, THREADS)
    return [i for ids in issued for i in ids]


@pytest.mark.parametrize("mode", ["session", "transaction"])
def test_the_c_path_behind_pgbouncer_never_repeats(
    native_kwargs: dict[str, object],
    postgres_url: str,
    mode: str,
) -> None:
    if pgbouncer.binary() is None:
        needs.skip("pgbouncer")
    server = DbUrl.parse(postgres_url).with_database(str(native_kwargs["dbname"]))
    reset = "DISCARD ALL" if mode == "session" else ""
    bouncer = pgbouncer.start(server, mode, reset, pool_size=2)
    try:
        ids = pooled_ids(bouncer.url, 25 if mode == "session" else 100, mode == "session")
    finally:
        bouncer.stop()
    assert len(ids) == len(set(ids))
    assert len({(i >> 12) & 1023 for i in ids}) <= 2
