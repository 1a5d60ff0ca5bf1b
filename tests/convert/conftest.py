"""Connections to the scratch servers, and a schema of a key with a foreign key and an M2M."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pymysql  # type: ignore[import-untyped,unused-ignore]
import pytest
from databases import DbUrl

Rows = list[tuple[Any, ...]]


@pytest.fixture
def pg(postgres_url: str) -> Iterator[Callable[..., Rows]]:
    """``pg(sql, *params) -> rows`` on an autocommit connection; tables made are dropped after."""
    with psycopg.connect(**DbUrl.parse(postgres_url).psycopg_kwargs(), autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS conv CASCADE")
        conn.execute("CREATE SCHEMA conv")

        def run(sql: str, *params: object) -> Rows:
            cursor = conn.execute(sql, params or None)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

        yield run
        conn.execute("DROP SCHEMA conv CASCADE")


@pytest.fixture
def my(mysql_url: str) -> Iterator[Callable[..., Rows]]:
    """``my(sql, *params) -> rows`` on an autocommit PyMySQL connection."""
    conn = pymysql.connect(**DbUrl.parse(mysql_url).pymysql_kwargs(), autocommit=True)
    tables = ("conv tag`s", "conv_child", "conv`parent")

    def drop() -> None:
        with conn.cursor() as cursor:
            cursor.execute("SET foreign_key_checks = 0")
            for name in tables:
                cursor.execute("DROP TABLE IF EXISTS `{}`".format(name.replace("`", "``")))
            cursor.execute("SET foreign_key_checks = 1")

    def run(sql: str, *params: object) -> Rows:
        with conn.cursor() as cursor:
            cursor.execute(sql, params or None)
            return list(cursor.fetchall())

    drop()
    yield run
    drop()
    conn.close()
