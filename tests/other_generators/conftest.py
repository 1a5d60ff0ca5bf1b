"""Fixtures of the other generators: Redis servers started per test, a coordination database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import databases
import needs
import pytest
from dbapi_database import DbApiDatabase
from othergen_support import REDIS_SERVER, RedisServer

COUNTER_TABLE = (
    "CREATE TABLE idfields_counter (name VARCHAR(100) PRIMARY KEY, value BIGINT NOT NULL)"
)


@pytest.fixture
def redis_servers(tmp_path: Path) -> Iterator[Callable[[int], list[RedisServer]]]:
    """Start throwaway ``redis-server`` processes on free loopback ports; all killed at the end."""
    if REDIS_SERVER is None:
        needs.skip("redis-server")
    started: list[RedisServer] = []

    def start(count: int) -> list[RedisServer]:
        servers = [RedisServer(tmp_path).start() for _ in range(count)]
        started.extend(servers)
        return servers

    yield start
    for server in started:
        server.kill()


@pytest.fixture(scope="session")
def own_postgres_url(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL database of these tests alone (other folders create the same tables)."""
    with databases.scratch_database(postgres_url) as url:
        yield url


@pytest.fixture(scope="session")
def counter_db(own_postgres_url: str) -> Iterator[DbApiDatabase]:
    """``idfields_counter`` in that database, as the coordinator of run ids."""
    database = DbApiDatabase("postgresql", own_postgres_url)
    database.execute(COUNTER_TABLE)
    yield database
    database.close()
