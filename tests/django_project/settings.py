"""Settings of the Django test project (``DJANGO_SETTINGS_MODULE=tests.django_project.settings``).

Three database aliases, so one session tests every backend: ``default`` (PostgreSQL), ``sqlite``
and ``mysql`` (MariaDB). The server addresses are not known here: the ``conftest.py`` next to
this file fills them from the test database chain (``postgres_url`` / ``mysql_url``) before
pytest-django creates the test databases; an alias without a server is pointed at SQLite and its
tests skip with the chain's reason.
"""

from __future__ import annotations

from typing import Any

import pymysql  # type: ignore[import-untyped,unused-ignore]

pymysql.install_as_MySQLdb()

SECRET_KEY = "idfields-django-tests"
DEBUG = False
USE_TZ = True
ALLOWED_HOSTS = ["testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "idfields.django_app",
    "tests.django_project.testapp",
]
MIDDLEWARE = [
    "tests.django_project.dbrouting.use_header_database",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tests.django_project.urls"
DATABASE_ROUTERS = ["tests.django_project.dbrouting.HeaderRouter"]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast test users

# Every model of the project (M2M through tables and contrib apps included) gets snowflake keys.
DEFAULT_AUTO_FIELD = "idfields.django_app.fields.SnowflakeAutoField"

_PLACEHOLDER: dict[str, Any] = {"NAME": "filled-by-conftest", "HOST": "", "USER": "", "PORT": ""}
DATABASES: dict[str, dict[str, Any]] = {
    "default": {"ENGINE": "django.db.backends.postgresql", **_PLACEHOLDER},
    "sqlite": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"},
    "mysql": {"ENGINE": "django.db.backends.mysql", **_PLACEHOLDER},
}

# The production default: nodes leased from the idfields tables on "default".
IDFIELDS = {
    "NODE_SOURCE": "lease",
    "LEASE_TTL": 30,
    "PERMUTATION_KEY": "3a7f0c9e5d2b8146a0f9e8d7c6b5a4938271605f4e3d2c1b0a99887766554433",
}  # a key for these tests only: a real one comes from the environment
REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "UNAUTHENTICATED_USER": None,
}
