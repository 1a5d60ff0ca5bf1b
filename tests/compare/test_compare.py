"""``idfields compare`` end to end: SQLite (default) and Postgres, JSON and PNG checked."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from idfields.cli import main
from idfields.compare import run_comparison
from idfields.compare.backends import rank_correlation
from idfields.compare.ids import uuid7, uuid7_at

METRICS = {"pk_index_bytes", "table_bytes", "correlation", "range_query_s", "range_query_rows"}


def check(document: dict[str, object], strategies: set[str], paths: set[str]) -> None:
    entries = {entry["name"]: entry for entry in document["strategies"]}  # type: ignore[attr-defined,index]
    assert strategies <= set(entries)
    baseline = entries[document["baseline"]]  # type: ignore[index]
    assert all(i["ratio_to_baseline"] == 1.0 for i in baseline["inserts"].values())
    for name, entry in entries.items():
        assert paths & set(entry["inserts"]), name
        for insert in entry["inserts"].values():
            assert insert["rows_per_s"] > 0
        for metric in METRICS:
            assert entry["metrics"][metric] is not None, (name, metric)
        assert entry["metrics"]["pk_index_bytes"] > 0
    # Time-leading keys follow insert order; random UUIDs do not.
    assert entries["snowflake"]["metrics"]["correlation"] > 0.99
    assert entries["uuid7"]["metrics"]["correlation"] > 0.99
    assert abs(entries["uuid4"]["metrics"]["correlation"]) < 0.5
    # Every strategy's "recent rows" query finds the newest tenth (ties in created_us aside).
    for entry in entries.values():
        assert 200 <= entry["metrics"]["range_query_rows"] < 1_000, entry["name"]


def test_sqlite_default_via_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["compare", "--rows", "2000", "--out", str(tmp_path), "--no-progress"])
    assert status == 0
    out = capsys.readouterr().out
    assert "AUTO_INCREMENT (baseline)" in out and "UUIDv7" in out
    document = json.loads((tmp_path / "compare.json").read_text())
    assert document["database"] == "sqlite" and document["rows"] == 2000
    check(
        document,
        {"auto_increment", "snowflake", "traceid", "decimal", "uuid4", "uuid7"},
        {"single", "batch"},
    )
    png = (tmp_path / "compare.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 20_000


def test_postgres(postgres_url: str, tmp_path: Path) -> None:
    report = run_comparison(postgres_url, rows=2000, out_dir=tmp_path, progress=False)
    document = json.loads((tmp_path / "compare.json").read_text())
    assert document == json.loads(json.dumps(report.to_dict()))
    check(
        document,
        {"identity", "bigserial", "snowflake", "uuid4", "uuid7"},
        {"single", "batch", "copy"},
    )
    entries = {entry["name"]: entry for entry in document["strategies"]}
    assert "insert_select" in entries["identity"]["inserts"]
    assert entries["identity"]["metrics"]["wal_bytes"] > 0
    # A random key spreads over more, emptier pages than an append-only one.
    assert (
        entries["uuid4"]["metrics"]["pk_index_bytes"]
        > entries["identity"]["metrics"]["pk_index_bytes"]
    )
    assert (tmp_path / "compare.png").stat().st_size > 20_000


def test_bad_url_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--database-url", "oracle://x/y", "--no-progress"]) == 2
    assert "scheme 'oracle' is not supported" in capsys.readouterr().err


def test_uuid7_and_rank_correlation() -> None:
    made = [uuid7() for _ in range(1000)]
    assert all(u.version == 7 and u.variant == uuid.RFC_4122 for u in made)
    assert made == sorted(made) and len(set(made)) == 1000  # monotonic within a millisecond
    assert uuid7_at(1_700_000_000_000_000_000) < uuid7_at(1_700_000_000_001_000_000)
    assert rank_correlation([1, 2, 3, 4]) == 1.0
    assert rank_correlation([4, 3, 2, 1]) == -1.0
