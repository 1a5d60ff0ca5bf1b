"""What the optional tests need beyond the dev extra, and how to get it: every skip for a missing
tool names the package to install, the command to run or the variable to set (``.ci/run``
installs and sets the same, so CI skips none of them)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REDIS_ENV = "IDFIELDS_TEST_REDIS_URL"

#: Why a test skips, by what it lacks; each says how to get it. ``<major>`` is the major version
#: of the PostgreSQL server on PATH (``initdb --version``).
NEEDS = {
    "pgbouncer": "pgbouncer is not installed: apt-get install pgbouncer",
    "pglogical": "the PostgreSQL server on PATH has no pglogical:"
    " apt-get install postgresql-<major>-pglogical",
    "native": "the PostgreSQL server lacks the C extension idfields_native:"
    " apt-get install postgresql-server-dev-<major>, then make -C pgext install",
    "faketime": "libfaketime is not installed: apt-get install faketime",
    "redis": f"no Redis server for Celery: set {REDIS_ENV}=redis://127.0.0.1:6379/15"
    " (apt-get install redis-server runs one there)",
    "redis-server": "redis-server is not on PATH: apt-get install redis-server",
    "compiled core": "the compiled core is not in use: unset IDFIELDS_PURE_PYTHON and"
    " pip install -e . with a C compiler (apt-get install gcc python3-dev)",
    "root": "needs root (namespaces, mounts, setpriv to another user): run the tests as root",
    "unshare": "unshare is not on PATH: apt-get install util-linux",
    "initdb": "initdb and pg_ctl are not on PATH: apt-get install postgresql",
    "mariadbd": "mariadbd is not on PATH: apt-get install mariadb-server",
}


def skip(need: str, require: str | None = None) -> NoReturn:
    """Skip for want of ``need`` (a key of :data:`NEEDS`), saying how to get it; fail instead
    when the environment variable ``require`` is 1 (CI: nothing may skip)."""
    unavailable(NEEDS[need], require)


def unavailable(reason: str, require: str | None = None) -> NoReturn:
    """Skip with ``reason``, or fail with it when the environment variable ``require`` is 1."""
    if require is not None and os.environ.get(require) == "1":
        pytest.fail(f"{require}=1 but: {reason}", pytrace=False)
    pytest.skip(reason)
