"""A Django process and a SQLAlchemy process lease nodes from the same tables without overlap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import databases
import pytest
import sqlalchemy as sa
from mixed_layouts import TINY

from idfields.coordination import LeaseSource, list_leases
from idfields.errors import NodeError
from idfields.generators import make_generator
from idfields.sqlalchemy_ext._coordination import SQLAlchemyDatabase

HERE = Path(__file__).parent

pytestmark = pytest.mark.slow


@pytest.fixture
def django_migrated(fresh_database: Callable[[str], str]) -> str:
    """A blank Postgres database with the idfields tables made by Django's migrate."""
    url = fresh_database("postgresql")
    run_django(url, ["-m", "django", "migrate", "--verbosity", "0"]).check_returncode()
    return url


def django_env(url: str) -> dict[str, str]:
    return {
        **os.environ,
        "COORDINATION_TEST_DB": url,
        "DJANGO_SETTINGS_MODULE": "mixed_settings",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent), str(HERE.parents[1])]),
    }


def run_django(url: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=django_env(url), capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def django_holders(django_migrated: str) -> Iterator[list[dict[str, object]]]:
    """Two Django processes, each holding one lease of the four-node layout."""
    processes = [
        subprocess.Popen(
            [sys.executable, str(HERE / "mixed_django_holder.py")],
            env=django_env(django_migrated),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        reports = []
        for process in processes:
            assert process.stdout is not None
            reports.append(json.loads(process.stdout.readline()))
        yield reports
    finally:
        for process in processes:
            process.communicate(timeout=60)


def test_django_and_sqlalchemy_share_the_node_space(
    django_migrated: str, django_holders: list[dict[str, object]]
) -> None:
    engine = sa.create_engine(databases.DbUrl.parse(django_migrated).sqlalchemy_url())
    database = SQLAlchemyDatabase(engine)
    generators = [make_generator(TINY, LeaseSource(database, ttl_s=30)) for _ in range(2)]
    sqlalchemy_ids = [generator() for generator in generators for _ in range(1000)]
    try:
        django_nodes = [report["node"]["node"] for report in django_holders]  # type: ignore[index]
        sqlalchemy_nodes = [generator.node["node"] for generator in generators]  # type: ignore[index]
        assert sorted(django_nodes + sqlalchemy_nodes) == [0, 1, 2, 3]
        live = [lease for lease in list_leases(database, "tiny") if lease.live]
        assert len(live) == 4
        django_ids = [value for report in django_holders for value in report["ids"]]  # type: ignore[attr-defined]
        assert len(set(django_ids) | set(sqlalchemy_ids)) == 4000
        with pytest.raises(NodeError, match="tiny"):
            make_generator(TINY, LeaseSource(database, ttl_s=30))()  # all four are held
    finally:
        for generator in generators:
            generator.close()
        database.dispose()
        engine.dispose()
