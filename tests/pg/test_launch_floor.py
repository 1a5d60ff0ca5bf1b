"""A blue/green cutover by logical replication that leaves the idfields tables out: green holds
blue's DecimalIds but not the launches they were issued under. ``record_launch`` on green must
never hand out a launch those rows may hold: it refuses, naming the fix, until told the
highest launch blue used. A throwaway cluster with ``wal_level = logical``, blue and green
databases in it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from dbapi_database import DbApiDatabase

from idfields import NodeError, make_generator
from idfields.coordination import DecimalSource, record_launch
from idfields.layouts import DECIMAL
from tests.pg.throwaway import Cluster, available, cluster_root

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.cluster, available]

ROWS = 1000
ITEMS = [("items", "id")]


@pytest.fixture
def blue_green() -> Iterator[tuple[Cluster, DbApiDatabase, DbApiDatabase]]:
    """Blue with the idfields tables, launch 1 and 1,000 DecimalId rows in ``items``;
    green with fresh idfields tables, subscribed to ``items`` alone, caught up."""
    with cluster_root() as root:
        cluster = Cluster(root, "logical", {"wal_level": "logical"}).init()
        cluster.start()
        blue = DbApiDatabase("postgresql", cluster.url(cluster.database("blue")))
        green = DbApiDatabase("postgresql", cluster.url(cluster.database("green")))
        for database in (blue, green):
            database.execute("CREATE TABLE items (id bigint PRIMARY KEY, body text)")
        record_launch(blue, "v1")
        insert(blue, issue(blue))
        blue.execute("CREATE PUBLICATION items FOR TABLE items")
        # A subscription to a database of the same cluster takes a slot made beforehand.
        blue.execute("SELECT pg_create_logical_replication_slot('green', 'pgoutput')")
        green.execute(
            f"CREATE SUBSCRIPTION from_blue CONNECTION 'host=127.0.0.1 port={cluster.port} "
            "user=postgres dbname=blue' PUBLICATION items "
            "WITH (create_slot = false, slot_name = 'green')"
        )
        deadline = time.monotonic() + 30
        while green.execute("SELECT count(*) FROM items").rows[0][0] < ROWS:
            assert time.monotonic() < deadline, "green never caught up"
            time.sleep(0.1)
        yield cluster, blue, green
        green.execute("DROP SUBSCRIPTION from_blue")
        blue.close()
        green.close()


def issue(database: DbApiDatabase) -> list[int]:
    generator = make_generator(DECIMAL, DecimalSource(database))
    try:
        return [generator() for _ in range(ROWS)]
    finally:
        generator.close()


def insert(database: DbApiDatabase, ids: list[int]) -> None:
    with database.atomic():
        for id_ in ids:
            database.execute("INSERT INTO items (id, body) VALUES (%s, 'x')", [id_])


def test_a_launch_on_green_never_reuses_one_blues_rows_hold(
    blue_green: tuple[Cluster, DbApiDatabase, DbApiDatabase],
) -> None:
    """The cutover's first launch on green: with green's empty launch log it was launch 1
    again, and green's first 1,000 DecimalIds were the rows blue had issued (1,000 of 1,000)."""
    _, blue, green = blue_green
    with pytest.raises(NodeError) as refused:
        record_launch(green, "v3", columns=ITEMS)
    message = str(refused.value)
    assert "items.id" in message and "--after" in message, message
    highest = int(blue.execute("SELECT max(id) FROM idfields_launch").rows[0][0])
    assert record_launch(green, "v3", columns=ITEMS, after=highest) == highest + 1
    ids = issue(green)
    held = {int(row[0]) for row in green.execute("SELECT id FROM items").rows}
    twice = len(held & set(ids))
    assert twice == 0, f"{twice} of green's {len(ids)} IDs were rows blue issued"


def test_a_launch_on_a_fresh_database_needs_no_floor(
    blue_green: tuple[Cluster, DbApiDatabase, DbApiDatabase],
) -> None:
    """Blue's own next launch, and a database whose DecimalId columns are empty: no refusal."""
    _, blue, green = blue_green
    assert record_launch(blue, "v2", columns=ITEMS) == 2
    green.execute("ALTER SUBSCRIPTION from_blue DISABLE")
    green.execute("TRUNCATE items")
    assert record_launch(green, "v1", columns=ITEMS) == 1
