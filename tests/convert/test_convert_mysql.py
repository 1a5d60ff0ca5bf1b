"""In-place conversion on MariaDB/MySQL: AUTO_INCREMENT with a FK and an M2M, and back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from idfields import StaticNode, make_generator
from idfields.migrations import convert

Run = Callable[..., list[tuple[Any, ...]]]


def test_forwards_and_back(my: Run) -> None:
    my(
        "CREATE TABLE `conv``parent` (id int AUTO_INCREMENT PRIMARY KEY, name varchar(20)) "
        "ENGINE=InnoDB"
    )
    my(
        "CREATE TABLE conv_child (id int AUTO_INCREMENT PRIMARY KEY, parent_id int NULL, "
        "FOREIGN KEY (parent_id) REFERENCES `conv``parent` (id)) ENGINE=InnoDB"
    )
    my(
        "CREATE TABLE `conv tag``s` (id int AUTO_INCREMENT PRIMARY KEY, parent_id int NOT NULL, "
        "FOREIGN KEY (parent_id) REFERENCES `conv``parent` (id) ON DELETE CASCADE) ENGINE=InnoDB"
    )
    for n in range(1, 31):
        my("INSERT INTO `conv``parent` (name) VALUES (%s)", f"p{n}")
        my("INSERT INTO conv_child (parent_id) VALUES (%s)", n)
        my("INSERT INTO `conv tag``s` (parent_id) VALUES (%s)", n)
    before = my("SELECT id, name FROM `conv``parent` ORDER BY id")

    info = convert.introspect("mysql", lambda sql, p: my(sql, *p), "conv`parent")
    assert info.kind == "auto_increment" and info.max_id == 30
    assert {r.table for r in info.references} == {"conv_child", "conv tag`s"}
    plan = convert.plan(info, convert.Target.of("snowflake", lock_timeout="2s"))
    for statement in plan.forwards:
        my(statement.annotated())

    assert my("SELECT id, name FROM `conv``parent` ORDER BY id") == before
    types = dict(
        my(
            "SELECT CONCAT(TABLE_NAME, '.', COLUMN_NAME), COLUMN_TYPE FROM "
            "information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
            "AND COLUMN_NAME IN ('id', 'parent_id') AND TABLE_NAME LIKE 'conv%%'"
        )
    )
    assert types["conv`parent.id"] == types["conv_child.parent_id"] == "bigint(20)"
    assert types["conv tag`s.parent_id"] == "bigint(20)"
    assert my(
        "SELECT IS_NULLABLE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
        "DATABASE() AND TABLE_NAME = 'conv_child' AND COLUMN_NAME = 'parent_id'"
    ) == [("YES",)]
    extra = my(
        "SELECT EXTRA FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
        "AND TABLE_NAME = 'conv`parent' AND COLUMN_NAME = 'id'"
    )
    assert "auto_increment" not in extra[0][0]
    new = make_generator("snowflake", StaticNode(2)).take(2)
    for value in new:
        my("INSERT INTO `conv``parent` (id, name) VALUES (%s, 'new')", value)
        my("INSERT INTO `conv tag``s` (parent_id) VALUES (%s)", value)
    assert min(new) > 30
    with pytest.raises(Exception, match="foreign key"):
        my("INSERT INTO conv_child (parent_id) VALUES (%s)", max(new) + 1)

    for statement in plan.backwards:
        my(statement.sql)
    my("INSERT INTO `conv``parent` (name) VALUES ('after')")
    (after,) = my("SELECT LAST_INSERT_ID()")[0]
    assert after > max(new)
    assert my("SELECT COUNT(*) FROM `conv``parent`") == [(33,)]


def test_db_generation_refused(my: Run) -> None:
    info = convert.KeyInfo("mysql", None, "t", kind="auto_increment")
    with pytest.raises(ValueError, match="generation='app'"):
        convert.plan(info, convert.Target.of("snowflake", generation="db"))
