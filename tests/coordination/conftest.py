"""Fixtures of the coordination tests: the three tables on PostgreSQL, MariaDB and SQLite,
reached through the tiny DB-API adapter, and helpers to run many processes at once."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from dbapi_database import SCHEMA, DbApiDatabase


def _with_tables(database: DbApiDatabase) -> DbApiDatabase:
    for statement in SCHEMA[database.vendor]:
        database.execute(statement)
    return database


@pytest.fixture(scope="session")
def _postgresql_db(postgres_url: str) -> Iterator[DbApiDatabase]:
    database = _with_tables(DbApiDatabase("postgresql", postgres_url))
    yield database
    database.close()


@pytest.fixture(scope="session")
def _mysql_db(mysql_url: str) -> Iterator[DbApiDatabase]:
    database = _with_tables(DbApiDatabase("mysql", mysql_url))
    yield database
    database.close()


@pytest.fixture(scope="session")
def _sqlite_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DbApiDatabase]:
    path: Path = tmp_path_factory.mktemp("coordination") / "coordination.sqlite3"
    database = _with_tables(DbApiDatabase("sqlite", str(path)))
    database.execute("PRAGMA journal_mode=WAL")
    yield database
    database.close()


@pytest.fixture(
    params=[
        pytest.param("postgresql", marks=pytest.mark.postgres),
        pytest.param("mysql", marks=pytest.mark.mysql),
        "sqlite",
    ]
)
def db(request: pytest.FixtureRequest) -> DbApiDatabase:
    """The coordination tables on each vendor (one database per session, shared by tests), made
    again if a suite sharing the database dropped them (``metadata.drop_all()``)."""
    database: DbApiDatabase = request.getfixturevalue(f"_{request.param}_db")
    return _with_tables(database)


@pytest.fixture
def unique() -> str:
    """A fresh suffix, so tests sharing the session's tables never see each other's rows."""
    return secrets.token_hex(4)
