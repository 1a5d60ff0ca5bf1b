"""Where the benchmarks find their servers: the test variables, else this machine's defaults."""

from __future__ import annotations

import os

SERVERS = {
    "postgresql": ("IDFIELDS_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"),
    "mysql": ("IDFIELDS_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test"),
}
_SQLALCHEMY_DRIVERS = {
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
    "mysql": "mysql+pymysql",
    "mariadb": "mysql+pymysql",
}


def server_url(vendor: str) -> str:
    """The plain URL (``postgresql://...`` / ``mysql://...``) of the ``vendor`` server."""
    env, default = SERVERS[vendor]
    return os.environ.get(env, default)


def sqlalchemy_url(vendor: str) -> str:
    """The same URL with the SQLAlchemy driver the project uses (psycopg 3, PyMySQL)."""
    scheme, rest = server_url(vendor).split("://", 1)
    return f"{_SQLALCHEMY_DRIVERS.get(scheme, scheme)}://{rest}"
