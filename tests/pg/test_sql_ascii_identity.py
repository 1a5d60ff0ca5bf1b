"""A coordination database in SQL_ASCII, the encoding of every throwaway cluster of
tests/pg/throwaway.py (``initdb`` with PATH only: the C locale): psycopg 3 returns its text as
bytes, and the identity read back must still match the one written, or every claim through a
``Database`` on plain psycopg sees a changed database and moves DecimalId to a new launch."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from dbapi_database import DbApiDatabase

from idfields import make_generator
from idfields.coordination import DecimalSource, LeaseSource, record_launch
from idfields.layouts import DECIMAL
from tests.pg.throwaway import Cluster, available, started_cluster

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.cluster, available]


@pytest.fixture(scope="module")
def ascii_cluster() -> Iterator[Cluster]:
    with started_cluster("ascii") as cluster:
        cluster.database("app", nodes=(0, 7))
        yield cluster


def launches(cluster: Cluster) -> int:
    with cluster.connect("app") as conn:
        return int(conn.execute("SELECT count(*) FROM idfields_launch").fetchone()[0])


def test_claims_on_an_sql_ascii_database_do_not_each_move_to_a_new_launch(
    ascii_cluster: Cluster,
) -> None:
    database = DbApiDatabase("postgresql", ascii_cluster.url("app"))
    record_launch(database, "v1")
    for _ in range(5):
        DecimalSource(database).acquire(DECIMAL)
    for _ in range(3):
        generator = make_generator("snowflake", LeaseSource(database, ttl_s=2.0))
        generator()
        generator.close()
    database.close()
    assert launches(ascii_cluster) == 1, (
        f"{launches(ascii_cluster)} launches after one record_launch and 8 claims on one "
        "unchanged SQL_ASCII database"
    )


def test_a_released_node_of_an_sql_ascii_database_is_claimed_again(
    ascii_cluster: Cluster,
) -> None:
    """One node, claimed and released, then claimed again: with the lease rows' text read as
    bytes, the claim saw no row, its insert met the released one, and it found no free node."""
    ascii_cluster.database("one_node", nodes=(0, 0))
    database = DbApiDatabase("postgresql", ascii_cluster.url("one_node"))
    try:
        for _ in range(2):
            generator = make_generator("snowflake", LeaseSource(database, ttl_s=2.0))
            generator()
            generator.close()
    finally:
        database.close()
