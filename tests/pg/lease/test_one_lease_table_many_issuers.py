"""C and PL/pgSQL backends and app processes on one lease table, with rollbacks after the IDs
were read, DISCARD ALL, role switches and backends terminated half-way: no ID twice.

The C path (idfields_native wired) and the PL/pgSQL functions it hands off to share every
backend's state, and app processes lease from the same table. Six backends on the C path
(single calls, 500-row statements, transactions rolled back after their IDs were read, DISCARD
ALL between clients), three on PL/pgSQL in the same database (``take_snowflake_ranges(n)`` and
``issue_snowflake()`` directly), one mixing both in one statement, two app processes
(LeaseSource) opening and closing generators, and a killer terminating a random backend every
0.3 s; about two million IDs in 8 s.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from databases import DbUrl
from dbapi_database import DbApiDatabase

from idfields import make_generator
from idfields.coordination import LeaseSource
from idfields.errors import NodeError

SECONDS = 8.0
Work = Callable[[psycopg.Connection[Any]], list[int]]


def c_path(conn: psycopg.Connection[Any]) -> list[int]:
    choice = random.random()
    if choice < 0.3:
        return [int(conn.execute("SELECT idfields.next_snowflake()").fetchone()[0])]
    if choice < 0.6:
        rows = conn.execute("SELECT idfields.next_snowflake() FROM generate_series(1, 500)")
        return [int(r[0]) for r in rows.fetchall()]
    if choice < 0.85:
        conn.execute("BEGIN")
        rows = conn.execute("SELECT idfields.next_snowflake() FROM generate_series(1, 50)")
        ids = [int(r[0]) for r in rows.fetchall()]
        conn.execute("ROLLBACK" if random.random() < 0.5 else "COMMIT")
        return ids
    conn.execute("DISCARD ALL")
    return []


def plpgsql_path(conn: psycopg.Connection[Any]) -> list[int]:
    if random.random() < 0.5:
        rows = conn.execute(
            "SELECT g FROM idfields.take_snowflake_ranges(300) AS r, "
            "generate_series(r.first_id, r.last_id) AS g"
        )
        return [int(r[0]) for r in rows.fetchall()]
    conn.execute("BEGIN")
    row = conn.execute("SELECT idfields.issue_snowflake(to_regclass('idfields_node_lease'))")
    ids = [int(row.fetchone()[0])]
    conn.execute("ROLLBACK")
    return ids


def mixed(conn: psycopg.Connection[Any]) -> list[int]:
    """Both paths in one statement, row by row (the subquery correlated, so run once a row)."""
    rows = conn.execute(
        "SELECT idfields.next_snowflake(), (SELECT r.first_id FROM "
        "idfields.take_snowflake_ranges(1 + 0 * g) AS r) FROM generate_series(1, 100) AS g"
    )
    return [int(i) for row in rows.fetchall() for i in row]


def test_c_plpgsql_and_app_processes_never_share_an_id(
    native_kwargs: dict[str, object],
    postgres_url: str,
) -> None:
    works: list[Work] = [c_path] * 6 + [plpgsql_path] * 3 + [mixed]
    issued: list[list[int]] = [[] for _ in range(len(works) + 2)]
    pids: dict[int, int] = {}
    errors: list[BaseException] = []
    stop = time.monotonic() + SECONDS

    def backend(index: int, work: Work) -> None:
        mine = issued[index]
        while time.monotonic() < stop:
            try:
                with psycopg.connect(
                    **native_kwargs, autocommit=True, prepare_threshold=None
                ) as conn:
                    pids[index] = conn.info.backend_pid
                    while time.monotonic() < stop:
                        mine.extend(work(conn))
            except psycopg.OperationalError:
                continue  # terminated: a new backend takes over
            except BaseException as error:  # surfaced below
                errors.append(error)
                return

    def app(index: int) -> None:
        mine = issued[index]
        url = str(DbUrl.parse(postgres_url).with_database(str(native_kwargs["dbname"])))
        while time.monotonic() < stop:
            database = DbApiDatabase("postgresql", url)
            try:
                generator = make_generator("snowflake", LeaseSource(database))
                try:
                    mine.extend(generator.take(2000))
                finally:
                    generator.close()
            except NodeError:
                pass
            finally:
                database.close()

    def killer() -> None:
        with psycopg.connect(**native_kwargs, autocommit=True) as admin:
            while time.monotonic() < stop:
                time.sleep(0.3)
                if pids:
                    pid = random.choice(list(pids.values()))
                    admin.execute("SELECT pg_terminate_backend(%s)", [pid])

    threads = [threading.Thread(target=backend, args=(i, w)) for i, w in enumerate(works)]
    threads += [threading.Thread(target=app, args=(len(works) + k,)) for k in range(2)]
    threads.append(threading.Thread(target=killer))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    every = [i for ids in issued for i in ids]
    assert len(every) > 10_000
    assert len(every) == len(set(every)), repeated_by_source(issued, works)


def repeated_by_source(issued: list[list[int]], works: list[Work]) -> str:
    """Which workers issued the repeated IDs, and on which nodes (for the failure message)."""
    seen: dict[int, int] = {}
    pairs: dict[tuple[str, str], int] = {}
    names = [w.__name__ for w in works] + ["app", "app"]
    for source, ids in enumerate(issued):
        for i in ids:
            if i in seen:
                key = (f"{names[seen[i]]}#{seen[i]}", f"{names[source]}#{source}")
                pairs[key] = pairs.get(key, 0) + 1
            else:
                seen[i] = source
    return f"repeats by (first, second) source: {pairs}"
