"""Django settings of the coordination tests' subprocesses (Django configures once per process,
so each test database gets a process of its own). ``COORDINATION_TEST_DB`` is a server URL or
a SQLite file path."""

from __future__ import annotations

import os

import pymysql  # type: ignore[import-untyped,unused-ignore]
from databases import DbUrl

pymysql.install_as_MySQLdb()

_TARGET = os.environ["COORDINATION_TEST_DB"]

SECRET_KEY = "coordination-tests"
USE_TZ = True
INSTALLED_APPS = ["idfields.django_app"]
DATABASES = (
    DbUrl.parse(_TARGET).django_databases()
    if "://" in _TARGET
    else {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": _TARGET}}
)
IDFIELDS = {"NODE_SOURCE": "lease", "LEASE_TTL": 5}
