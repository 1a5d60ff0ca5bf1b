"""Metrics: scraped while IDs are issued and a lease is lost, through the plain hook and through
OpenTelemetry (an in-memory reader of the SDK stands in for Prometheus)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
import readme_blocks
from databases import DbUrl
from dbapi_database import DbApiDatabase
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from test_coordination_leases import lease_layout

from idfields import ClockMovedBackwards, make_generator
from idfields.coordination import LeaseSource
from idfields.metrics import EVENTS, generator_stats, subscribe
from idfields.metrics.otel import instrument


@pytest.fixture
def events() -> Iterator[list[tuple[str, float, Mapping[str, str]]]]:
    seen: list[tuple[str, float, Mapping[str, str]]] = []
    unsubscribe = subscribe(
        lambda event, value, attributes: seen.append((event, value, attributes))
    )
    yield seen
    unsubscribe()


def _points(reader: InMemoryMetricReader) -> dict[str, list[tuple[Mapping[str, object], float]]]:
    """Every data point of the last collection, by instrument name."""
    data = reader.get_metrics_data()
    found: dict[str, list[tuple[Mapping[str, object], float]]] = {}
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    value = getattr(point, "value", None)
                    if value is None:
                        value = point.sum  # type: ignore[union-attr]
                    found.setdefault(metric.name, []).append((dict(point.attributes or {}), value))
    return found


def test_metrics_follow_issuing_and_a_lost_lease(
    db: DbApiDatabase, unique: str, events: list[tuple[str, float, Mapping[str, str]]]
) -> None:
    reader = InMemoryMetricReader()
    stop = instrument(MeterProvider(metric_readers=[reader]), database=lambda: db)
    layout = lease_layout(f"metrics_{unique}", node_bits=1)
    try:
        generator = make_generator(layout, LeaseSource(db, ttl_s=0.3))
        generator.take(5000)
        first = generator.node
        neighbour = LeaseSource(db, ttl_s=60).acquire(layout)  # holds the other node
        # A process whose clock is 5 s ahead sees our lease lapsed and takes the node.
        LeaseSource(db, ttl_s=60, clock=lambda: time.time_ns() + 5 * 10**9).acquire(layout)
        assert neighbour.release is not None
        neighbour.release(time.time_ns())  # the neighbour exits: its node is free again
        time.sleep(0.15)  # past renew_after: the next ID renews and finds the lease lost
        generator.take(100)
        assert generator.node != first
        points = _points(reader)
    finally:
        stop()
    names = [event for event, _, _ in events]
    assert set(names) <= set(EVENTS)
    assert names.count("lease.claimed") == 4  # ours, the neighbour's, the thief's, ours again
    assert names.count("lease.lost") == 1
    ours = [s for s in generator_stats() if s.layout == layout.lease_key]
    assert [s.issued for s in ours] == [5100]
    issued = [
        v for attrs, v in points["idfields.ids.issued"] if attrs["layout"] == layout.lease_key
    ]
    assert issued == [5100]
    assert (
        sum(v for a, v in points["idfields.lease.claims"] if a["layout"] == layout.lease_key) == 4
    )
    assert (
        sum(v for a, v in points["idfields.lease.losses"] if a["layout"] == layout.lease_key) == 1
    )
    assert "idfields.lease.claim.duration" in points
    assert "idfields.clock.run_ahead" in points
    in_use = [v for a, v in points["idfields.nodes.in_use"] if a["layout"] == layout.lease_key]
    free = [v for a, v in points["idfields.nodes.free"] if a["layout"] == layout.lease_key]
    assert (in_use, free) == ([2], [0])  # the thief's and ours; none left
    generator.close()


def test_clock_events_reach_every_listener_and_a_broken_one_costs_no_id(
    events: list[tuple[str, float, Mapping[str, str]]],
) -> None:
    now = [time.time_ns()]

    def sleep(seconds: float) -> None:
        now[0] += round(seconds * 1e9)

    def broken(event: str, value: float, attributes: Mapping[str, str]) -> None:
        raise RuntimeError("metrics backend down")

    unsubscribe = subscribe(broken)
    try:
        generator = make_generator(
            "snowflake", node=1001, clock=lambda: now[0], sleep=sleep, max_skew_ns=2_000_000
        )
        generator()
        now[0] -= 50_000_000  # the clock steps back 50 ms, far past the 2 ms skew
        with pytest.raises(ClockMovedBackwards):  # max_wait defaults to max_skew
            generator()
        generator = make_generator(
            "snowflake",
            node=1002,
            clock=lambda: now[0],
            sleep=sleep,
            max_skew_ns=2_000_000,
            max_wait_ns=10**9,
        )
        first = generator()
        now[0] -= 50_000_000
        assert generator() > first  # waited for the clock instead of repeating
    finally:
        unsubscribe()
    names = [event for event, _, _ in events]
    assert names.count("clock.backwards") == 2
    waits = [value for event, value, _ in events if event == "clock.wait"]
    assert waits and 0.04 < sum(waits) < 0.06


# Runs a recipe of docs/how-to/operating-at-scale.md (imported as the page has it) in a process
# of its own, issues IDs, then collects as Prometheus scrapes, 30 times, counting the database's
# connections (other than the counting one) after each collection.
_COLLECTIONS = """
import importlib, json, os, sys
import psycopg
from prometheus_client import generate_latest

setup, recipe = sys.argv[1:]
issue = importlib.import_module(setup).issue
importlib.import_module(recipe)
issue()
counts, gauges = [], []
with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as counting:
    for _ in range(30):
        scraped = generate_latest().decode().splitlines()
        gauges = [line for line in scraped if line.startswith("idfields_nodes_in_use")]
        counts.append(counting.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()[0])
print(json.dumps({"counts": counts, "gauges": gauges}))
"""

_SQLALCHEMY_SETUP = """
import os
import sqlalchemy as sa
from idfields.sqlalchemy_ext import add_tables, get_generator

tables = sa.MetaData()
add_tables(tables)
engine = sa.create_engine(os.environ["SQLALCHEMY_URL"])
tables.create_all(engine)
engine.dispose()


def issue():
    get_generator("snowflake").take(10)
"""

_DJANGO_SETUP = """
import django
from django.core.management import call_command

django.setup()
call_command("migrate", "idfields", verbosity=0)


def issue():
    from idfields.django_app.sources import generator_for

    generator_for("snowflake").take(10)
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("recipe", "setup"), [("sqlalchemy", _SQLALCHEMY_SETUP), ("django", _DJANGO_SETUP)]
)
def test_the_documented_recipes_hold_their_connections_and_report_the_room(
    recipe: str, setup: str, tmp_path: Path, fresh_database: Callable[[str], str]
) -> None:
    url = fresh_database("postgresql")
    env = readme_blocks.environment("postgresql", url, DbUrl.parse(url).sqlalchemy_url())
    section = readme_blocks.section("docs/how-to/operating-at-scale.md", "Node room in the metrics")
    readme_blocks.run_section(section, "postgresql", tmp_path, env)  # writes the recipes
    (tmp_path / "setup.py").write_text(setup)
    databases = DbUrl.parse(url).django_databases()
    (tmp_path / "settings.py").write_text(
        f"SECRET_KEY = 'recipes'\nUSE_TZ = True\nINSTALLED_APPS = ['idfields.django_app']\n"
        f"DATABASES = {databases!r}\nIDFIELDS = {{'NODE_SOURCE': 'lease'}}\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", _COLLECTIONS, "setup", f"metrics_{recipe}"],
        cwd=tmp_path,
        env={**env, "DJANGO_SETTINGS_MODULE": "settings"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    counts = found["counts"]
    # The first collection opens what the recipe keeps; a lease renewal running on its own
    # thread during a collection may hold one more connection of the same pool for a moment.
    assert max(counts) <= counts[0] + 1, f"connections after each collection: {counts}"
    assert any('layout="snowflake"' in line for line in found["gauges"]), done.stderr
    assert "not read" not in done.stderr, done.stderr


def test_instrument_refuses_what_is_neither_a_database_nor_a_function() -> None:
    module = types.ModuleType(
        "idfields.django_app.sources"
    )  # the slip: the module, not its function
    with pytest.raises(TypeError, match="a function returning it"):
        instrument(MeterProvider(metric_readers=[InMemoryMetricReader()]), database=module)  # type: ignore[arg-type]
