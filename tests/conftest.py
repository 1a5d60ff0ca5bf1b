"""Shared fixtures. The database chain itself lives in ``databases.py``."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import databases
import pytest

from idfields import nodes

Resolver = Callable[[ExitStack], databases.Resolution]


# The servers, by the marker that selects their tests and the values that name them in a
# parametrised fixture (``params=["sqlite", "postgresql", "mysql"]`` and kin).
SERVERS = {"postgres": {"postgres_url", "postgresql"}, "mysql": {"mysql_url", "mysql"}}


def _deselected(config: pytest.Config, marker: str) -> bool:
    """Whether ``-m`` leaves out the tests of ``marker``'s server, whatever their other marks.

    pytest has no public evaluator of ``-m``; its own is used, with ``marker`` on and every
    combination of the other names in the expression: false for all of them excludes the server.
    """
    expression = config.getoption("markexpr")
    if not expression:
        return False
    from _pytest.mark.expression import Expression

    compiled = Expression.compile(expression)
    others = sorted(set(re.findall(r"[A-Za-z_]\w*", expression)) - {"and", "or", "not", marker})
    for values in itertools.product((False, True), repeat=len(others)):
        marks = {marker, *(name for name, on in zip(others, values, strict=True) if on)}
        if compiled.evaluate(lambda name, /, marks=marks, **_: name in marks):
            return False
    return True


def _scratch_url(
    request: pytest.FixtureRequest, marker: str, resolve: Resolver, require: str
) -> Iterator[str]:
    """Yield a scratch database URL; without a server skip, or fail when env ``require`` is 1.

    Nothing is started when ``-m`` deselects ``marker``: a test reaching the server anyway (a
    fixture asking for it at run time) is skipped.
    """
    if _deselected(request.config, marker):
        pytest.skip(f"-m {request.config.getoption('markexpr')!r} deselects {marker} servers")
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
def postgres_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """URL of a PostgreSQL database private to this test session."""
    yield from _scratch_url(
        request, "postgres", databases.resolve_postgres, "IDFIELDS_REQUIRE_POSTGRES"
    )


@pytest.fixture(scope="session")
def mysql_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """URL of a MariaDB/MySQL database private to this test session."""
    yield from _scratch_url(request, "mysql", databases.resolve_mysql, "IDFIELDS_REQUIRE_MYSQL")


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


@pytest.hookimpl(tryfirst=True)  # before pytest's own hook deselects by -m
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark tests by the servers they use, so ``-m 'not mysql'`` works without manual marks:
    by the fixtures they request, and by the parameters of parametrised fixtures."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        used: list[object] = [*getattr(item, "fixturenames", ())]
        for value in callspec.params.values() if callspec else ():
            used.extend(value if isinstance(value, tuple) else [value])
        for marker, names in SERVERS.items():
            if any(isinstance(name, str) and name in names for name in used):
                item.add_marker(marker)
