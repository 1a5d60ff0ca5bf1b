"""What a test session leaves in the databases the test URLs name: nothing, since every test works
in a scratch database of its own. tests/conftest.py lists these databases' objects when the
session starts and fails the session if it ends with more."""

from __future__ import annotations

import os

import psycopg
import pymysql  # type: ignore[import-untyped,unused-ignore]
from databases import MYSQL_ENV, POSTGRES_ENV, DbUrl

_POSTGRES_OBJECTS = """
SELECT 'schema ' || nspname FROM pg_namespace
 WHERE nspname NOT IN ('public', 'information_schema') AND nspname NOT LIKE 'pg\\_%'
UNION ALL
SELECT 'relation ' || c.oid::regclass::text FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname NOT IN ('information_schema') AND n.nspname NOT LIKE 'pg\\_%'
   AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
UNION ALL
SELECT 'function ' || p.oid::regprocedure::text FROM pg_proc p
  JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname NOT IN ('information_schema') AND n.nspname NOT LIKE 'pg\\_%'
UNION ALL
SELECT 'extension ' || extname FROM pg_extension WHERE extname <> 'plpgsql'
"""
_MYSQL_OBJECTS = """
SELECT CONCAT('table ', table_name) FROM information_schema.tables
 WHERE table_schema = DATABASE()
UNION ALL
SELECT CONCAT(LOWER(routine_type), ' ', routine_name) FROM information_schema.routines
 WHERE routine_schema = DATABASE()
"""


def objects(url: str) -> set[str]:
    """The schemas, tables, sequences, views, functions and extensions of the database ``url``
    names (tables and routines on MariaDB/MySQL)."""
    server = DbUrl.parse(url)
    if server.scheme == "postgresql":
        with psycopg.connect(**server.psycopg_kwargs(), connect_timeout=5) as conn:
            return {row[0] for row in conn.execute(_POSTGRES_OBJECTS)}
    with (
        pymysql.connect(**server.pymysql_kwargs(), connect_timeout=5) as conn,
        conn.cursor() as cursor,
    ):
        cursor.execute(_MYSQL_OBJECTS)
        return {row[0] for row in cursor.fetchall()}


def named_databases() -> dict[str, set[str]]:
    """The objects of each database the environment's test URLs name and the suite can reach
    (one it cannot reach, it cannot write to either)."""
    found = {}
    for env in (POSTGRES_ENV, MYSQL_ENV):
        url = os.environ.get(env)
        if url:
            try:
                found[url] = objects(url)
            except (psycopg.Error, pymysql.MySQLError, OSError):
                continue
    return found


def left_behind(before: dict[str, set[str]]) -> list[str]:
    """What the named databases hold now and did not hold at ``before`` (per URL)."""
    return [f"{url}: {name}" for url, had in before.items() for name in sorted(objects(url) - had)]
