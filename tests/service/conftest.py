"""SQLAlchemy URLs of the three backends for the service tests (helpers: service_support)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import databases
import pytest
import sqlalchemy as sa

from idfields.sqlalchemy_ext import metadata


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgresql", marks=pytest.mark.postgres),
        pytest.param("mysql", marks=pytest.mark.mysql),
    ]
)
def sa_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A sync SQLAlchemy URL holding the idfields tables (one session database, shared)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'service.sqlite3'}"
    else:
        fixture = "postgres_url" if request.param == "postgresql" else "mysql_url"
        url = databases.DbUrl.parse(request.getfixturevalue(fixture)).sqlalchemy_url()
    engine = sa.create_engine(url)
    metadata.create_all(engine)
    engine.dispose()
    yield url
