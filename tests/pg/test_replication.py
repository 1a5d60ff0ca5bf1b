"""Two shards publishing into a third database with PostgreSQL's logical replication, on three
throwaway clusters (``wal_level=logical``, started once per run): each shard inserts at once
with ``DEFAULT idfields.next_snowflake()`` from several sessions and with app-side IDs leased
from its own tables. Given disjoint node ranges, every row arrives and the subscriber's apply
workers never fail; given overlapping ranges (every node, the default), ``idfields ranges``
refuses the pair before anything is inserted."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

import databases
import needs
import psycopg
import pytest
from databases import DbUrl
from dbapi_database import DbApiDatabase

from idfields import sql
from idfields.cli import main
from idfields.coordination import LeaseSource
from idfields.generators import make_generator
from tests.pg.conftest import TABLES, run_in_threads

pytestmark = pytest.mark.postgres

LOGICAL = {"wal_level": "logical", "max_wal_senders": "10", "max_replication_slots": "10"}
SESSIONS = 3  # database-side inserters per shard, beside one app-side inserter
BATCHES = 5
ROWS = 2000  # per batch


@dataclass(frozen=True)
class Clusters:
    shard_a: str
    shard_b: str
    hub: str


@pytest.fixture(scope="session")
def clusters() -> Iterator[Clusters]:
    missing = databases.binaries_missing("initdb", "pg_ctl")
    if missing is not None:
        pytest.fail(f"three throwaway clusters need the PostgreSQL server binaries: {missing}")
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(databases.throwaway_postgres(LOGICAL)) for _ in range(3)]
        yield Clusters(*urls)


@dataclass(frozen=True)
class Topology:
    shards: dict[str, DbUrl]
    hub: DbUrl


@pytest.fixture
def topology(clusters: Clusters) -> Iterator[Topology]:
    """A fresh database on each cluster, the shards' tables (the hub's item table only)."""
    with contextlib.ExitStack() as stack:
        a, b, hub = (
            DbUrl.parse(stack.enter_context(databases.scratch_database(url)))
            for url in (clusters.shard_a, clusters.shard_b, clusters.hub)
        )
        with connect(hub) as conn:
            conn.execute("CREATE TABLE item (id bigint PRIMARY KEY, shard text, side text)")
        yield Topology({"a": a, "b": b}, hub)
        with connect(hub) as conn:  # before the shards go: it drops their replication slots
            for name in ("a", "b"):
                conn.execute(f"DROP SUBSCRIPTION IF EXISTS from_{name}".encode())


def connect(url: DbUrl) -> psycopg.Connection:
    return psycopg.connect(**url.psycopg_kwargs(), autocommit=True)


def install(shard: DbUrl, nodes: object) -> None:
    with connect(shard) as conn:
        conn.execute(TABLES)
        conn.execute(sql.load(sql.VERSION, nodes=nodes).encode())
        conn.execute(
            "CREATE TABLE item (id bigint PRIMARY KEY DEFAULT idfields.next_snowflake(), "
            "shard text, side text)"
        )
        conn.execute("CREATE PUBLICATION items FOR TABLE item")


def subscribe(topology: Topology) -> None:
    with connect(topology.hub) as conn:
        for name, shard in topology.shards.items():
            source = f"host={shard.host} port={shard.port} dbname={shard.database} user=postgres"
            conn.execute(
                f"CREATE SUBSCRIPTION from_{name} CONNECTION '{source}' PUBLICATION items".encode()
            )


def ranges_command(topology: Topology, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = main(["ranges", *(str(url) for url in topology.shards.values())])
    out, err = capsys.readouterr()
    return status, out + err


def insert_concurrently(topology: Topology) -> int:
    """Every shard's sessions and app-side generator insert at once; the rows inserted."""
    workers = [(name, side) for name in topology.shards for side in ["app"] + ["db"] * SESSIONS]

    def work(index: int) -> None:
        name, side = workers[index]
        shard = topology.shards[name]
        if side == "db":
            with connect(shard) as conn:
                for _ in range(BATCHES):
                    conn.execute(
                        "INSERT INTO item (shard, side) SELECT %s, 'db' "
                        "FROM generate_series(1, %s)",
                        [name, ROWS],
                    )
            return
        database = DbApiDatabase("postgresql", str(shard))
        generator = make_generator("snowflake", LeaseSource(database, ttl_s=10))
        try:
            with connect(shard) as conn, conn.cursor() as cursor:
                for _ in range(BATCHES):
                    cursor.executemany(
                        "INSERT INTO item (id, shard, side) VALUES (%s, %s, 'app')",
                        [(i, name) for i in generator.take(ROWS)],
                    )
        finally:
            generator.close()
            database.close()

    run_in_threads(work, len(workers))
    return len(workers) * BATCHES * ROWS


def arrived(topology: Topology, expected: int, timeout_s: float = 60) -> tuple[int, int]:
    """The rows in the hub and the subscriptions' apply/sync errors, once every row arrived
    or an apply worker failed (or the timeout passed)."""
    deadline = time.monotonic() + timeout_s
    with connect(topology.hub) as conn:
        while True:
            rows = conn.execute("SELECT count(*) FROM item").fetchone()[0]
            errors = conn.execute(
                "SELECT coalesce(sum(apply_error_count + sync_error_count), 0) "
                "FROM pg_stat_subscription_stats"
            ).fetchone()[0]
            if rows >= expected or errors or time.monotonic() > deadline:
                return rows, int(errors)
            time.sleep(0.2)


def test_shards_with_disjoint_ranges_replicate_every_row(
    topology: Topology, capsys: pytest.CaptureFixture[str]
) -> None:
    install(topology.shards["a"], range(0, 512))
    install(topology.shards["b"], range(512, 1024))
    status, output = ranges_command(topology, capsys)
    assert status == 0, output
    assert "nodes 0-511" in output and "nodes 512-1023" in output
    subscribe(topology)
    inserted = insert_concurrently(topology)
    rows, errors = arrived(topology, inserted)
    assert (rows, errors) == (inserted, 0)
    with connect(topology.hub) as conn:
        nodes = {
            shard: (low, high)
            for shard, low, high in conn.execute(
                "SELECT shard, min((id >> 12) & 1023), max((id >> 12) & 1023) FROM item "
                "GROUP BY shard"
            ).fetchall()
        }
    assert nodes["a"][1] < 512 <= nodes["b"][0]


def test_shards_sharing_nodes_are_refused_before_any_insert(
    topology: Topology, capsys: pytest.CaptureFixture[str]
) -> None:
    install(topology.shards["a"], None)
    install(topology.shards["b"], range(1000, 1100))
    status, output = ranges_command(topology, capsys)
    assert status == 2
    a, b = (str(url) for url in topology.shards.values())
    assert f"{a} (all nodes) and {b} (nodes 1000-1099) share nodes 1000-1099" in output
    assert "nodes=" in output


# -- two primaries replicating both ways (pglogical) ------------------------------------------

PGLOGICAL = {
    **LOGICAL,
    "shared_preload_libraries": "pglogical",
    "track_commit_timestamp": "on",
    "max_worker_processes": "16",
}
# A server that trusts only listed output plugins must list pglogical's (its providers use it).
TRUSTED_PLUGINS = {"output_plugin_libraries": "'pgoutput,test_decoding,pglogical_output'"}


@pytest.fixture(scope="session")
def pglogical_clusters() -> Iterator[tuple[str, str]]:
    if not databases.extension_available("pglogical"):
        needs.skip("pglogical")
    with contextlib.ExitStack() as stack:
        settings = dict(PGLOGICAL)
        if "output_plugin_libraries" in databases.server_settings():
            settings.update(TRUSTED_PLUGINS)
        one, two = (stack.enter_context(databases.throwaway_postgres(settings)) for _ in "12")
        yield one, two


@pytest.fixture
def primaries(pglogical_clusters: tuple[str, str]) -> Iterator[dict[str, DbUrl]]:
    """A new database on each cluster (left to die with its cluster: pglogical's workers hold
    a dropped database up), for two pglogical nodes."""
    found = {}
    for name, url in zip(("one", "two"), pglogical_clusters, strict=True):
        found[name] = DbUrl.parse(url).with_database(
            f"{databases.SCRATCH_PREFIX}{name}_{id(found)}"
        )
        with connect(DbUrl.parse(url)) as admin:
            admin.execute(f'CREATE DATABASE "{found[name].database}"'.encode())
    yield found


def dsn(url: DbUrl) -> str:
    return f"host={url.host} port={url.port} dbname={url.database} user=postgres"


def replicate_both_ways(primaries: dict[str, DbUrl]) -> None:
    for name, url in primaries.items():
        with connect(url) as conn:
            conn.execute("CREATE EXTENSION pglogical")
            conn.execute("SELECT pglogical.create_node(%s, %s)", [name, dsn(url)])
            conn.execute("SELECT pglogical.replication_set_add_table('default', 'item')")
    for name, url in primaries.items():
        (other,) = (peer for key, peer in primaries.items() if key != name)
        with connect(url) as conn:
            conn.execute(
                "SELECT pglogical.create_subscription(%s, %s, synchronize_data := false, "
                "forward_origins := '{}')",
                [f"{name}_from_peer", dsn(other)],
            )
    deadline = time.monotonic() + 30
    for url in primaries.values():
        with connect(url) as conn:
            while conn.execute(
                "SELECT status FROM pglogical.show_subscription_status()"
            ).fetchone() != ("replicating",):
                assert time.monotonic() < deadline, "the subscription did not start"
                time.sleep(0.1)


def test_two_primaries_with_disjoint_ranges_replicate_both_ways(
    primaries: dict[str, DbUrl], capsys: pytest.CaptureFixture[str]
) -> None:
    install(primaries["one"], range(0, 512))
    install(primaries["two"], range(512, 1024))
    status, output = ranges_command(Topology(primaries, primaries["one"]), capsys)
    assert status == 0, output
    replicate_both_ways(primaries)
    inserted = insert_concurrently(Topology(primaries, primaries["one"]))
    deadline = time.monotonic() + 60
    for url in primaries.values():
        with connect(url) as conn:
            while True:
                rows = conn.execute("SELECT count(*) FROM item").fetchone()[0]
                state = conn.execute(
                    "SELECT status FROM pglogical.show_subscription_status()"
                ).fetchone()
                if rows >= inserted or state != ("replicating",) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert (rows, state) == (inserted, ("replicating",))
