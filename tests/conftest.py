"""Shared fixtures. The database chain itself lives in ``databases.py``."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Generator, Iterator
from contextlib import ExitStack

import databases
import leftovers
import needs
import pytest

from idfields import nodes

Resolver = Callable[[ExitStack], databases.Resolution]
_NAMED_BEFORE = pytest.StashKey[dict[str, set[str]]]()


# What a test needs, by the marker that selects it: the fixtures that imply it, and the values
# that name it in a parametrised fixture (``params=["sqlite", "postgresql", "mysql"]`` and kin).
# A test without any of these markers needs no server, no cluster and no C extension: the fast
# tier (``make check``) runs it.
IMPLIED = {
    "postgres": {"postgres_url", "postgresql"},
    "mysql": {"mysql_url", "mysql"},
    "redis": {"redis_url", "redis_servers"},
    "native": {"native_kwargs", "native"},
    "cluster": {"cluster", "clusters", "pglogical_clusters", "primary_and_standby"},
}


class ServerDeselected(pytest.skip.Exception):
    """A test reached a server that ``-m`` deselects, so it lacks that server's marker: the
    report turns it into a failure (:func:`pytest_runtest_makereport`). A skip, not a failure,
    where it is raised: Django's settings fixture asks for every server and lives without the
    deselected ones."""


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


def _refuse_deselected(request: pytest.FixtureRequest, marker: str) -> None:
    if _deselected(request.config, marker):
        raise ServerDeselected(
            f"-m {request.config.getoption('markexpr')!r} deselects the tests of {marker}"
            f" servers, yet this test reaches one without the {marker} marker: mark it"
            f" @pytest.mark.{marker}, or add the fixture that reaches the server to"
            f" IMPLIED[{marker!r}] in tests/conftest.py"
        )


def _scratch_url(
    request: pytest.FixtureRequest, marker: str, resolve: Resolver, require: str
) -> Iterator[str]:
    """Yield a scratch database URL; without a server skip, or fail when env ``require`` is 1.

    Nothing is started when ``-m`` deselects ``marker``: a test reaching the server anyway (a
    fixture asking for it at run time) lacks the marker, and fails.
    """
    _refuse_deselected(request, marker)
    with ExitStack() as stack:
        found = resolve(stack)
        if found.url is None:
            needs.unavailable(found.reason, require)
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


@pytest.fixture(scope="session")
def redis_url(request: pytest.FixtureRequest) -> str:
    """The Redis server of ``IDFIELDS_TEST_REDIS_URL`` (Celery's broker and results; tests key
    what they write by a name of their own, so sessions and workers share its database)."""
    _refuse_deselected(request, "redis")
    url = os.environ.get(needs.REDIS_ENV)
    if not url:
        needs.skip("redis", "IDFIELDS_REQUIRE_REDIS")
    return url


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
    """Mark tests by what they need, so ``-m 'not mysql'`` works without manual marks: by the
    fixtures they request, and by the parameters of parametrised fixtures."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        used: list[object] = [*getattr(item, "fixturenames", ())]
        for value in callspec.params.values() if callspec else ():
            used.extend(value if isinstance(value, tuple) else [value])
        for marker, names in IMPLIED.items():
            if any(isinstance(name, str) and name in names for name in used):
                item.add_marker(marker)


# After pytest-randomly's shuffle and pytest-django's order, which it keeps within each part.
@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_slow_first(items: list[pytest.Item]) -> None:
    """The slow tests first, then the rest: pytest-xdist hands out tests one at a time
    (``--maxschedchunk 1``), so the workers start on the long ones and end together on short
    ones, instead of one worker running the suite's longest test while the other idles."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A test that reached a deselected server fails: unmarked, ``-m`` could not select it."""
    report: pytest.TestReport = yield
    if call.excinfo is not None and call.excinfo.errisinstance(ServerDeselected):
        report.outcome = "failed"
        report.longrepr = str(call.excinfo.value)
    return report


def pytest_sessionstart(session: pytest.Session) -> None:
    """List what the databases the test URLs name hold (once: in the controller under xdist)."""
    if not hasattr(session.config, "workerinput"):
        session.config.stash[_NAMED_BEFORE] = leftovers.named_databases()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the session when it left anything in those databases: tests write to scratch ones."""
    before = session.config.stash.get(_NAMED_BEFORE, {})
    left = leftovers.left_behind(before)
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", "left in the databases the test URLs name", red=True)
            for line in left:
                reporter.write_line(line)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
