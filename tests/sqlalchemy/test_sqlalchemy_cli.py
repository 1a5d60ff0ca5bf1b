"""``python -m idfields.sqlalchemy_ext nodes URL`` takes the application's own URL, async
drivers included (asyncpg, psycopg async, aiosqlite), and shows a lease taken through it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import databases
import pytest
import sqlalchemy as sa

from idfields.coordination import LeaseSource
from idfields.layouts import get_layout
from idfields.sqlalchemy_ext import SQLAlchemyDatabase, metadata

ROOT = Path(__file__).resolve().parent.parent.parent


def _nodes(url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "idfields.sqlalchemy_ext", "nodes", url],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )


@pytest.mark.parametrize(
    "driver",
    [
        "sqlite+aiosqlite",
        pytest.param("postgresql+asyncpg", marks=pytest.mark.postgres),
        pytest.param("postgresql+psycopg_async", marks=pytest.mark.postgres),
        pytest.param("postgresql+psycopg", marks=pytest.mark.postgres),
        pytest.param("mysql+aiomysql", marks=pytest.mark.mysql),
    ],
)
def test_nodes_takes_the_applications_async_url(
    driver: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if driver.startswith("sqlite"):
        sync_url = f"sqlite:///{tmp_path / 'nodes.sqlite3'}"
    else:
        fixture = "mysql_url" if driver.startswith("mysql") else "postgres_url"
        sync_url = databases.DbUrl.parse(request.getfixturevalue(fixture)).sqlalchemy_url()
    engine = sa.create_engine(sync_url)
    metadata.create_all(engine)
    database = SQLAlchemyDatabase(engine)
    assignment = LeaseSource(database).acquire(get_layout("snowflake"))
    try:
        url = driver + sync_url[sync_url.index(":") :]
        shown = _nodes(url)
        assert shown.returncode == 0, shown.stderr
        assert f" {assignment.values['node']} " in shown.stdout, shown.stdout
    finally:
        assert assignment.release is not None
        assignment.release(0)
        database.dispose()
        engine.dispose()


def test_a_url_of_an_unknown_async_driver_names_the_fix() -> None:
    shown = _nodes("postgresql+nosuchdriver://localhost/db")
    assert shown.returncode == 2
    assert "error:" in shown.stderr and "nosuchdriver" in shown.stderr
