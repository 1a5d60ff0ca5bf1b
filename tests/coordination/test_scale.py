"""The README's ways past 1,024 writers and past one database, each shown, not just claimed."""

from __future__ import annotations

import pytest
from dbapi_database import DbApiDatabase

from idfields import Layout, Node, Sequence, Timestamp, make_generator
from idfields.coordination import LeaseSource, list_leases
from idfields.layouts import SNOWFLAKE_EPOCH, get_layout


@pytest.mark.slow
def test_traceid_gives_more_than_1024_concurrent_writers_distinct_nodes(
    db: DbApiDatabase,
) -> None:
    traceid = get_layout("traceid")
    assert traceid.node_count == 65_536
    held = [LeaseSource(db).acquire(traceid) for _ in range(1100)]
    try:
        nodes = {assignment.values["node_no"] for assignment in held}
        assert len(nodes) == 1100
    finally:
        for assignment in held:
            assert assignment.release is not None
            assignment.release(0)


def test_a_wider_node_field_is_the_arithmetic_the_readme_gives() -> None:
    wide = Layout(
        "wide_nodes",
        [Timestamp(41, epoch=SNOWFLAKE_EPOCH), Node(14), Sequence(8)],
    )
    assert wide.node_count == 16_384
    assert wide.ids_per_second == 256_000
    assert wide.runs_out is not None and wide.runs_out.year == get_layout("snowflake").runs_out.year  # type: ignore[union-attr]


def test_one_coordination_database_keeps_sharded_writers_apart(db: DbApiDatabase) -> None:
    """Two writers storing into different shards, leasing from one coordination database."""
    shards: list[list[int]] = [[], []]
    writers = [make_generator("snowflake", LeaseSource(db)) for _ in shards]
    for _ in range(50):
        for shard, writer in zip(shards, writers, strict=True):
            shard.extend(writer.take(100))
    assert writers[0].node != writers[1].node
    assert not set(shards[0]) & set(shards[1])
    live = {row.node for row in list_leases(db, "snowflake") if row.live}
    assert {w.node["node"] for w in writers} <= live  # type: ignore[index]
    for writer in writers:
        writer.close()
