"""Engines on the three backends, and a clean ``id_column`` registry for every test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import databases
import pytest
import sqlalchemy as sa

from idfields.layouts import Layout
from idfields.nodes import DevelopmentNode, NodeSource
from idfields.sqlalchemy_ext import configure

BACKENDS = ["sqlite", "postgresql", "mysql"]


def development_source(layout: Layout) -> NodeSource:
    """A fresh fixed node per generator; the registry's fence keeps re-made ones apart."""
    return DevelopmentNode()


@pytest.fixture(autouse=True)
def id_registry() -> Iterator[None]:
    configure(source=development_source)
    yield
    configure(source=development_source)


def url_for(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'test.sqlite3'}"
    fixture = "postgres_url" if backend == "postgresql" else "mysql_url"
    return databases.DbUrl.parse(request.getfixturevalue(fixture)).sqlalchemy_url()


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sa.Engine]:
    """A sync engine on each backend (Postgres via psycopg, MariaDB via PyMySQL)."""
    created = sa.create_engine(url_for(request.param, request, tmp_path))
    yield created
    created.dispose()


@pytest.fixture
def pg_engine(postgres_url: str) -> Iterator[sa.Engine]:
    created = sa.create_engine(databases.DbUrl.parse(postgres_url).sqlalchemy_url())
    yield created
    created.dispose()
