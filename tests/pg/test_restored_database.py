"""A cutover to a copy that lacks the last commits: the clients' database is switched (a
pooler or DNS repointed) to a ``pg_dump``/``pg_restore`` copy taken before a process claimed,
as after a restore or a failover to a standby that lagged. A second process starting on the
copy must not take what the first, still running, holds; counts IDs received twice."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import databases
import psycopg
import pytest
from dbapi_database import Repointed

from idfields import NodeError, make_generator, sql
from idfields.coordination import DecimalSource, LeaseSource, record_launch
from idfields.generators import IdGenerator
from idfields.layouts import DECIMAL
from tests.pg.conftest import TABLES

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

TTL_S = 2.0


@pytest.fixture
def blue_green(postgres_url: str) -> Iterator[tuple[str, str]]:
    """Two databases: blue with the tables and the functions on node 0 alone, green empty."""
    with (
        databases.scratch_database(postgres_url) as blue,
        databases.scratch_database(postgres_url) as green,
    ):
        with psycopg.connect(**databases.DbUrl.parse(blue).psycopg_kwargs()) as conn:
            conn.execute(TABLES)
            conn.execute(sql.load(sql.VERSION, nodes=(0, 0)).encode())
            conn.execute(
                "INSERT INTO idfields_counter (name, value) VALUES (%s, %s)",
                ["lease ttl ceiling ms", round(TTL_S * 1000)],
            )
            conn.commit()
        yield blue, green


def restore(source: str, target: str) -> None:
    """``pg_dump -Fc`` of ``source`` restored into ``target``."""
    dump = subprocess.run(["pg_dump", "-Fc", _dsn(source)], check=True, capture_output=True).stdout
    subprocess.run(["pg_restore", "-d", _dsn(target)], input=dump, check=True, capture_output=True)


def _dsn(url: str) -> str:
    kwargs = databases.DbUrl.parse(url).psycopg_kwargs()
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in kwargs.items()})


@contextmanager
def process(source: LeaseSource | DecimalSource, layout: object) -> Iterator[IdGenerator]:
    generator = make_generator(layout, source)  # type: ignore[arg-type]
    try:
        yield generator
    finally:
        generator.close()


def issue(generator: IdGenerator, count: int) -> list[int] | None:
    """``count`` IDs, or None when the generator refuses (its node lost, or none to claim)."""
    try:
        return [generator() for _ in range(count)]
    except NodeError:
        return None


def test_a_process_on_a_restored_copy_never_takes_a_live_processs_node(
    blue_green: tuple[str, str],
) -> None:
    """Blue records its identity (a process claims and exits); the dump; the first process
    claims the one node; the cutover to green, restored from the dump; a second process
    starts there. Both go on for three ttls, the second retrying its refusals."""
    blue, green = blue_green
    first_db, second_db = Repointed(blue), Repointed(blue)
    with process(LeaseSource(second_db, ttl_s=TTL_S), "snowflake") as earlier:
        earlier()
    restore(blue, green)
    firsts: list[int] = []
    seconds: list[int] = []
    with process(LeaseSource(first_db, ttl_s=TTL_S), "snowflake") as first:
        firsts += issue(first, 100) or []
        first_db.repoint(green)
        second_db.repoint(green)
        with process(LeaseSource(second_db, ttl_s=TTL_S), "snowflake") as second:
            first_stopped = False
            deadline = time.monotonic() + 3 * TTL_S
            while time.monotonic() < deadline:
                if not first_stopped:
                    got = issue(first, 200)
                    first_stopped = got is None
                    firsts += got or []
                seconds += issue(second, 200) or []
                time.sleep(0.005)
    first_db.close()
    second_db.close()
    twice = len(set(firsts) & set(seconds))
    assert seconds, "the second process never issued: the grace did not end"
    assert twice == 0, f"{twice} of the second process's {len(seconds)} IDs were the first's"


def test_a_decimal_process_on_a_restored_copy_takes_a_generator_id_of_its_own(
    blue_green: tuple[str, str],
) -> None:
    """A launch and an identity on blue, the dump, a DecimalSource claim on blue, the
    cutover to green restored from the dump, a claim there: with the counter row of the copy,
    the second took the first's generator id and all 1,000 of its IDs came again."""
    blue, green = blue_green
    first_db, second_db = Repointed(blue), Repointed(blue)
    record_launch(first_db, "v1")
    DecimalSource(first_db).acquire(DECIMAL)  # records blue's identity
    restore(blue, green)
    with process(DecimalSource(first_db), DECIMAL) as first:
        firsts = issue(first, 1000) or []
    second_db.repoint(green)
    with process(DecimalSource(second_db), DECIMAL) as second:
        seconds = issue(second, 1000) or []
    first_db.close()
    second_db.close()
    twice = len(set(firsts) & set(seconds))
    assert twice == 0, f"{twice} of {len(firsts) + len(seconds)} IDs received twice"
