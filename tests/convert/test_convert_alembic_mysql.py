"""``op.convert_to_ksorted_id`` on MariaDB through a project made by ``alembic init``.

Alembic's stock ``env.py`` runs each migration in a transaction, and every MariaDB DDL statement
commits it implicitly: the operation must work inside it, and a migration that stops half-way
(DDL already committed) must run again to the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import alembic_env
import pymysql  # type: ignore[import-untyped,unused-ignore]
import pytest
from alembic import command
from databases import DbUrl

from idfields.errors import LockTimeout

pytestmark = pytest.mark.mysql
UPGRADE = """op.create_idfields_tables()
    op.convert_to_ksorted_id("customers", lock_timeout="1s")
    op.convert_to_ksorted_id("orders", lock_timeout="1s")"""
DOWNGRADE = """op.restore_auto_increment("orders")
    op.restore_auto_increment("customers")
    op.drop_idfields_tables()"""


@pytest.fixture
def shop(
    fresh_database: Callable[[str], str],
) -> Iterator[tuple[str, Callable[..., list[tuple[object, ...]]]]]:
    """A fresh MariaDB database with AUTO_INCREMENT customers and their orders; ``run(sql)``."""
    url = DbUrl.parse(fresh_database("mysql"))
    conn = pymysql.connect(**url.pymysql_kwargs(), autocommit=True)

    def run(sql: str, *params: object) -> list[tuple[object, ...]]:
        with conn.cursor() as cursor:
            cursor.execute(sql, params or None)
            return list(cursor.fetchall())

    run("CREATE TABLE customers (id int AUTO_INCREMENT PRIMARY KEY, name varchar(50))")
    run(
        "CREATE TABLE orders (id int AUTO_INCREMENT PRIMARY KEY, "
        "customer_id int NOT NULL, FOREIGN KEY (customer_id) REFERENCES customers (id))"
    )
    run("INSERT INTO customers (name) VALUES ('ada'), ('grace')")
    run("INSERT INTO orders (customer_id) VALUES (1), (2), (2)")
    yield url.sqlalchemy_url(), run
    conn.close()


def types(run: Callable[..., list[tuple[object, ...]]]) -> dict[str, tuple[object, ...]]:
    rows = run(
        "SELECT CONCAT(TABLE_NAME, '.', COLUMN_NAME), DATA_TYPE, EXTRA FROM "
        "information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
        "AND TABLE_NAME IN ('customers', 'orders') AND COLUMN_NAME IN ('id', 'customer_id')"
    )
    return {str(name): (kind, extra) for name, kind, extra in rows}


def test_stock_env_converts_every_table_and_back(
    shop: tuple[str, Callable[..., list[tuple[object, ...]]]], tmp_path: Path
) -> None:
    url, run = shop
    config = alembic_env.stock_project(tmp_path, url, "None")
    alembic_env.write_revision(config, "0001", None, UPGRADE, DOWNGRADE)
    command.upgrade(config, "head")
    assert types(run) == {
        "customers.id": ("bigint", ""),
        "orders.id": ("bigint", ""),
        "orders.customer_id": ("bigint", ""),
    }
    assert run("SELECT version_num FROM alembic_version") == [("0001",)]
    command.downgrade(config, "base")
    assert types(run)["customers.id"] == ("bigint", "auto_increment")
    assert run("SELECT COUNT(*) FROM orders JOIN customers ON customers.id = customer_id") == [(3,)]


def test_stock_env_reruns_a_migration_stopped_half_way(
    shop: tuple[str, Callable[..., list[tuple[object, ...]]]], tmp_path: Path, mysql_url: str
) -> None:
    url, run = shop
    config = alembic_env.stock_project(tmp_path, url, "None")
    alembic_env.write_revision(config, "0001", None, UPGRADE, DOWNGRADE)
    holder = pymysql.connect(**DbUrl.parse(url.replace("mysql+pymysql", "mysql")).pymysql_kwargs())
    try:
        with holder.cursor() as cursor:  # a reader in a transaction: a metadata lock on orders
            cursor.execute("BEGIN")
            cursor.execute("SELECT COUNT(*) FROM orders")
        with pytest.raises(LockTimeout):
            command.upgrade(config, "head")
    finally:
        holder.rollback()
        holder.close()
    assert run("SHOW TABLES LIKE 'idfields_launch'")  # committed by MariaDB before the timeout
    command.upgrade(config, "head")  # the same migration again, to the end
    assert set(types(run).values()) == {("bigint", "")}
    assert run("SELECT version_num FROM alembic_version") == [("0001",)]
