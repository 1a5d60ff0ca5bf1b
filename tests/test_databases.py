"""The test database chain works against real servers, and says how to enable it when it can't."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import psycopg
import pymysql  # type: ignore[import-untyped,unused-ignore]
import pytest
from databases import (
    MYSQL_ENV,
    POSTGRES_ENV,
    SCRATCH_PREFIX,
    DbUrl,
    Resolution,
    docker_available,
    resolve_mysql,
    resolve_postgres,
    scratch_database,
    throwaway_mariadb,
    throwaway_postgres,
)
from needs import NEEDS


def _postgres_query(url: str, query: psycopg.abc.Query) -> list[tuple[object, ...]]:
    with psycopg.connect(**DbUrl.parse(url).psycopg_kwargs(), connect_timeout=5) as conn:
        return conn.execute(query).fetchall()


def _mysql_query(url: str, query: str) -> list[tuple[object, ...]]:
    with pymysql.connect(**DbUrl.parse(url).pymysql_kwargs()) as conn, conn.cursor() as cursor:
        cursor.execute(query)
        return list(cursor.fetchall())


def _database_names(url: str) -> set[object]:
    if DbUrl.parse(url).scheme == "postgresql":
        return {row[0] for row in _postgres_query(url, "select datname from pg_database")}
    return {row[0] for row in _mysql_query(url, "show databases")}


def test_postgres_fixture_is_a_private_database(postgres_url: str) -> None:
    assert _postgres_query(postgres_url, "select 1") == [(1,)]
    [(name,)] = _postgres_query(postgres_url, "select current_database()")
    assert str(name).startswith(SCRATCH_PREFIX)


def test_mysql_fixture_is_a_private_database(mysql_url: str) -> None:
    assert _mysql_query(mysql_url, "select 1") == [(1,)]
    [(name,)] = _mysql_query(mysql_url, "select database()")
    assert str(name).startswith(SCRATCH_PREFIX)


@pytest.mark.parametrize(
    "server",
    [
        pytest.param("postgres_url", marks=pytest.mark.postgres),
        pytest.param("mysql_url", marks=pytest.mark.mysql),
    ],
)
def test_scratch_database_is_dropped_on_exit(server: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(server)
    with scratch_database(url) as scratch:
        name = DbUrl.parse(scratch).database
        assert name in _database_names(url)
    assert name not in _database_names(url)


@pytest.mark.slow
@pytest.mark.cluster
@pytest.mark.skipif(not shutil.which("initdb"), reason=NEEDS["initdb"])
def test_throwaway_postgres_cluster_runs_and_goes_away() -> None:
    with throwaway_postgres() as url:
        assert _postgres_query(url, "select 1") == [(1,)]
        with scratch_database(url) as scratch:
            assert _postgres_query(scratch, "select 2") == [(2,)]
    with pytest.raises(psycopg.OperationalError):
        _postgres_query(url, "select 1")


@pytest.mark.slow
@pytest.mark.cluster
@pytest.mark.skipif(not shutil.which("mariadbd"), reason=NEEDS["mariadbd"])
def test_throwaway_mariadb_runs_and_goes_away() -> None:
    with throwaway_mariadb() as url:
        assert _mysql_query(url, "select 1") == [(1,)]
        with scratch_database(url) as scratch:
            assert _mysql_query(scratch, "select 2") == [(2,)]
    # pymysql.OperationalError: see _wait_for_mysql in databases.py for why not pymysql.err.
    with pytest.raises(pymysql.OperationalError):
        _mysql_query(url, "select 1")


Resolver = Callable[[ExitStack], Resolution]
RESOLVERS = [(resolve_postgres, POSTGRES_ENV), (resolve_mysql, MYSQL_ENV)]


@pytest.fixture
def bare_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No URL in the environment, no Docker engine, no server binaries on PATH."""
    for env in (POSTGRES_ENV, MYSQL_ENV):
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-docker.sock'}")
    monkeypatch.setenv("PATH", str(tmp_path))


@pytest.mark.usefixtures("bare_machine")
@pytest.mark.parametrize(("resolve", "env"), RESOLVERS)
def test_without_any_server_the_reason_says_how_to_enable(resolve: Resolver, env: str) -> None:
    with ExitStack() as stack:
        found = resolve(stack)
    assert found.url is None
    assert f"{env}=" in found.reason
    assert "Docker" in found.reason
    assert "on PATH" in found.reason


@pytest.mark.usefixtures("bare_machine")
@pytest.mark.parametrize(("resolve", "env"), RESOLVERS)
def test_environment_url_comes_first(
    resolve: Resolver, env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(env, "postgresql://someone@db.invalid:1/x")
    with ExitStack() as stack:
        assert resolve(stack) == Resolution("postgresql://someone@db.invalid:1/x", source=env)


def test_docker_is_not_available_without_an_engine(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-docker.sock'}")
    assert not docker_available()


def test_postgres_url_gives_every_client_its_arguments() -> None:
    url = DbUrl.parse("postgres://app:p%40ss@db.example:6543/ids")
    assert url.psycopg_kwargs() == {
        "host": "db.example",
        "port": 6543,
        "user": "app",
        "password": "p@ss",
        "dbname": "ids",
    }
    assert url.sqlalchemy_url() == "postgresql+psycopg://app:p%40ss@db.example:6543/ids"
    assert str(url.with_database("other")) == "postgresql://app:p%40ss@db.example:6543/other"
    assert url.django_databases()["default"] == {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "ids",
        "USER": "app",
        "PASSWORD": "p@ss",
        "HOST": "db.example",
        "PORT": "6543",
    }
    with pytest.raises(ValueError, match="not a mysql URL"):
        url.pymysql_kwargs()


def test_mysql_url_defaults_to_the_server_defaults() -> None:
    url = DbUrl.parse("mysql://127.0.0.1")
    assert url.pymysql_kwargs() == {
        "host": "127.0.0.1",
        "port": 3306,
        "user": "root",
        "password": "",
        "database": "mysql",
        "charset": "utf8mb4",
    }
    assert url.sqlalchemy_url() == "mysql+pymysql://root@127.0.0.1:3306/mysql"
    assert url.django_databases()["default"]["OPTIONS"] == {"charset": "utf8mb4"}


@pytest.mark.parametrize("bad", ["sqlite:///x.db", "postgresql://h/db?sslmode=require"])
def test_unusable_urls_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="supported"):
        DbUrl.parse(bad)
