"""Shared fixtures. The database chain itself lives in ``databases.py``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import databases
import pytest

from idfields import nodes

Resolver = Callable[[ExitStack], databases.Resolution]


def _scratch_url(resolve: Resolver, require: str) -> Iterator[str]:
    """Yield a scratch database URL; without a server skip, or fail when env ``require`` is 1."""
    with ExitStack() as stack:
        found = resolve(stack)
        if found.url is None:
            if os.environ.get(require) == "1":
                pytest.fail(f"{require}=1 but: {found.reason}", pytrace=False)
            pytest.skip(found.reason)
        yield stack.enter_context(databases.scratch_database(found.url))


@pytest.fixture(autouse=True)
def _fresh_fixed_claims() -> None:
    """Each test starts without the fixed-node fences of earlier ones, as a new process would:
    otherwise one test's fake clock (say, in 2030) fences the node of every later test."""
    nodes.forget_fixed_claims()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a PostgreSQL database private to this test session."""
    yield from _scratch_url(databases.resolve_postgres, "IDFIELDS_REQUIRE_POSTGRES")


@pytest.fixture(scope="session")
def mysql_url() -> Iterator[str]:
    """URL of a MariaDB/MySQL database private to this test session."""
    yield from _scratch_url(databases.resolve_mysql, "IDFIELDS_REQUIRE_MYSQL")


@pytest.fixture
def fresh_database(request: pytest.FixtureRequest) -> Iterator[Callable[[str], str]]:
    """A factory of empty databases ("postgresql" or "mysql") on the session's servers, for tests
    that need a blank schema (the session database holds other suites' tables)."""
    with ExitStack() as stack:

        def make(kind: str) -> str:
            fixture = "postgres_url" if kind == "postgresql" else "mysql_url"
            server: str = request.getfixturevalue(fixture)
            return stack.enter_context(databases.scratch_database(server))

        yield make


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark tests by the servers they use, so ``-m 'not mysql'`` works without manual marks."""
    for item in items:
        for fixture, marker in (("postgres_url", "postgres"), ("mysql_url", "mysql")):
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)
