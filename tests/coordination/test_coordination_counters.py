"""Counters, the launch log and DecimalId generator ids on PostgreSQL, MariaDB and SQLite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from coordination_procs import run_together
from dbapi_database import SCHEMA, DbApiDatabase

from idfields import (
    Layout,
    LayoutExhausted,
    Node,
    NodeError,
    NodeNotConfigured,
    Sequence,
    make_generator,
)
from idfields.coordination import (
    LAUNCH_ENV,
    DecimalSource,
    current_launch,
    next_value,
    record_launch,
)

TINY_DECIMAL = Layout(
    "tinydecimal",
    [
        Sequence(2, name="counter", minimum=1, maximum=5),
        Node(5, name="generator_id"),
        Node(5, name="launch_id"),
    ],
    base=10,
)


def _take_values(index: int, db: DbApiDatabase, name: str) -> list[int]:
    values = [next_value(db, name) for _ in range(25)]
    db.close()
    return values


@pytest.mark.slow
def test_counter_values_are_never_given_twice(db: DbApiDatabase, unique: str) -> None:
    taken = run_together(6, _take_values, db, f"test:{unique}")
    flat = sorted(value for values in taken for value in values)
    assert flat == list(range(1, 151))


def test_launches_count_up_and_are_never_reused(
    db: DbApiDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(LAUNCH_ENV, raising=False)
    first = record_launch(db, "v1.0.0")
    second = record_launch(db, "v1.0.1")
    assert second == first + 1 and current_launch(db) == second
    db.execute("DELETE FROM idfields_launch WHERE id = %s", [second])
    assert record_launch(db, "v1.0.2") == second + 1  # the deleted id is not handed out again
    monkeypatch.setenv(LAUNCH_ENV, str(first))
    assert current_launch(db) == first  # the deployment's environment wins
    for bad in ("x", "0", "100000"):
        monkeypatch.setenv(LAUNCH_ENV, bad)
        with pytest.raises(NodeError, match=LAUNCH_ENV):
            current_launch(db)
    with pytest.raises(ValueError, match="<= 100"):
        record_launch(db, "x" * 101)


def test_no_launch_recorded_names_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(LAUNCH_ENV, raising=False)
    empty = DbApiDatabase("sqlite", str(tmp_path / "empty.sqlite3"))
    for statement in SCHEMA["sqlite"]:
        empty.execute(statement)
    with pytest.raises(NodeNotConfigured, match="idfields_launch --label"):
        DecimalSource(empty).acquire(TINY_DECIMAL)
    empty.close()


def _issue_decimal_ids(index: int, db: DbApiDatabase, launch: int) -> list[int]:
    os.environ[LAUNCH_ENV] = str(launch)
    generator = make_generator(TINY_DECIMAL, DecimalSource(db))
    ids = generator.take(23)  # 5 per generator id: 5 fresh generator ids
    db.close()
    return ids


@pytest.mark.slow
def test_launches_times_processes_give_distinct_decimal_ids(db: DbApiDatabase, unique: str) -> None:
    launches = [record_launch(db, f"{unique}-{n}") for n in range(3)]
    batches = [
        ids for launch in launches for ids in run_together(3, _issue_decimal_ids, db, launch)
    ]
    ids = [value for batch in batches for value in batch]
    assert len(set(ids)) == len(ids) == 9 * 23
    decoded = [TINY_DECIMAL.decode(value).values for value in ids]
    blocks = {(d["launch_id"], d["generator_id"]) for d in decoded}
    assert {launch for launch, _ in blocks} == set(launches)
    assert len(blocks) == 9 * 5  # each exhaustion took a generator id no one else got
    by_process = [{TINY_DECIMAL.decode(v).values["generator_id"] for v in b} for b in batches]
    for one in range(len(by_process)):
        for other in range(one):
            same_launch = one // 3 == other // 3
            assert not (same_launch and by_process[one] & by_process[other])


def test_generator_ids_run_out_with_the_fix_named(
    db: DbApiDatabase, monkeypatch: pytest.MonkeyPatch, unique: str
) -> None:
    narrow = Layout(
        "narrowdecimal",
        [
            Sequence(2, name="counter", minimum=1),
            Node(1, name="generator_id"),
            Node(5, name="launch_id"),
        ],
        base=10,
    )
    monkeypatch.setenv(LAUNCH_ENV, str(record_launch(db, unique)))
    source = DecimalSource(db)
    assert [source.acquire(narrow).values["generator_id"] for _ in range(10)] == list(range(10))
    with pytest.raises(LayoutExhausted, match="record a new launch"):
        source.acquire(narrow)
    with pytest.raises(NodeError, match="generator_id and launch_id"):
        source.acquire(Layout("runs", [Sequence(4), Node(5, name="run")], base=10))
