"""The Django test project's databases, filled from the test database chain.

``settings.DATABASES`` names three aliases, ``default`` (PostgreSQL), ``sqlite`` and ``mysql``
(MariaDB), without addresses. Before pytest-django creates the test databases, the servers of the
chain (``postgres_url`` / ``mysql_url``) are written in; an alias whose server is missing is
pointed at in-memory SQLite so the session still starts, and every test using that alias skips
with the chain's reason. Tests name their aliases with ``@pytest.mark.django_db(databases=...)``,
or take the ``alias`` fixture, which runs them once per backend.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from databases import DbUrl
from django.conf import settings
from django.db import connections

from idfields.django_app.conf import get_settings

HERE = Path(__file__).parent
SERVERS = {
    "default": ("postgres_url", pytest.mark.postgres),
    "mysql": ("mysql_url", pytest.mark.mysql),
}
ALIASES = ("default", "sqlite", "mysql")
_unavailable: dict[str, str] = {}


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for alias, (fixture, _) in SERVERS.items():
        try:
            url = request.getfixturevalue(fixture)
        except pytest.skip.Exception as skipped:
            _unavailable[alias] = str(skipped)
            # A file, not ":memory:": the coordination's private connection must see the tables.
            # Only these keys: the rest holds the defaults Django filled in (HOST, ...).
            folder = tmp_path_factory.mktemp(f"no_{alias}_server")
            test = {**settings.DATABASES[alias].get("TEST", {}), "NAME": str(folder / "test.db")}
            settings.DATABASES[alias].update(
                ENGINE="django.db.backends.sqlite3", NAME=str(folder / "unused.db"), TEST=test
            )
            with contextlib.suppress(AttributeError):  # one made already keeps its old engine
                del connections[alias]
            if alias == settings.IDFIELDS.get("DATABASE", "default"):
                # SQLite cannot write a lease while a test's transaction holds it: this one
                # process takes the development node instead.
                settings.IDFIELDS = {**settings.IDFIELDS, "NODE_SOURCE": "development"}
                get_settings.cache_clear()
            continue
        settings.DATABASES[alias].update(DbUrl.parse(url).django_databases()["default"])


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """The migrated test databases, plus a recorded launch (DecimalId needs one)."""
    from idfields.coordination import record_launch
    from idfields.django_app.sources import coordination_database

    with django_db_blocker.unblock():
        record_launch(coordination_database(), "idfields django tests")
    yield  # the app itself releases the leases, and closes their connection, before the drop


@pytest.fixture(autouse=True)
def _skip_missing_servers(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("django_db")
    if marker is None:
        return
    request.getfixturevalue("django_db_modify_db_settings")  # fills _unavailable
    aliases = set(marker.kwargs.get("databases") or ["default"])
    if "alias" in request.fixturenames:
        aliases = {request.getfixturevalue("alias")}
    for alias in sorted(aliases & set(_unavailable)):
        pytest.skip(_unavailable[alias])


@pytest.fixture(params=ALIASES)
def alias(request: pytest.FixtureRequest) -> str:
    """Each backend in turn; the test's django_db mark must allow all of ALIASES."""
    name: str = request.param
    return name


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark tests by server, so ``-m 'not mysql'`` deselects the MariaDB runs."""
    for item in items:
        if HERE not in Path(str(item.path)).parents:
            continue
        callspec = getattr(item, "callspec", None)
        used = {callspec.params["alias"]} if callspec and "alias" in callspec.params else set()
        marker = item.get_closest_marker("django_db")
        if not used and marker is not None:
            used = set(marker.kwargs.get("databases") or ["default"])
        for alias in used & set(SERVERS):
            item.add_marker(SERVERS[alias][1])
