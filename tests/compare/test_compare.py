"""``idfields compare`` end to end: SQLite (default) and Postgres, JSON and PNG checked."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from idfields.cli import main
from idfields.compare._backends import rank_correlation
from idfields.compare._ids import uuid7, uuid7_at
from idfields.compare._runner import run_comparison

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
            assert len(insert["runs"]) == document["repeat"]  # type: ignore[index]
            assert min(insert["runs"]) <= insert["rows_per_s"] <= max(insert["runs"])
            assert insert["spread"] >= 0 and isinstance(insert["tie"], bool)
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
    # Like with like: every SQLite table is clustered on its key (UUID ones WITHOUT ROWID), so
    # the key's b-tree is the whole table for each strategy, not a table against an index.
    for entry in document["strategies"]:
        assert entry["metrics"]["pk_index_bytes"] == entry["metrics"]["table_bytes"]
    assert "median of 3 interleaved runs" in out and "tie" in out


def catalog(url: str) -> tuple[list[str], list[str], list[str]]:
    """Schemas, extensions and non-catalog functions of the database at ``url``."""
    with psycopg.connect(url) as conn:
        return (
            # Temporary schemas stay (empty) after a session that used temp tables: PG reuses them.
            [
                r[0]
                for r in conn.execute(
                    "SELECT nspname FROM pg_namespace WHERE nspname !~ '^pg_(toast_)?temp_' "
                    "ORDER BY 1"
                )
            ],
            [r[0] for r in conn.execute("SELECT extname FROM pg_extension ORDER BY 1")],
            [
                r[0]
                for r in conn.execute(
                    "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n "
                    "ON n.oid = p.pronamespace WHERE n.nspname NOT IN "
                    "('pg_catalog', 'information_schema') ORDER BY 1"
                )
            ],
        )


@pytest.mark.postgres
def test_postgres_fresh_database_has_the_db_side_row_and_is_left_clean(
    fresh_database: Callable[[str], str], tmp_path: Path
) -> None:
    """An empty database gets a 'snowflake (PL/pgSQL)' row (the functions install there), and
    pgstattuple, installed for the run, is dropped afterwards."""
    url = fresh_database("postgresql")
    before = catalog(url)
    report = run_comparison(url, rows=2000, out_dir=tmp_path, progress=False, repeat=2)
    assert catalog(url) == before  # no schema, extension or function left behind
    document = json.loads((tmp_path / "compare.json").read_text())
    assert document == json.loads(json.dumps(report.to_dict()))
    check(
        document,
        {"identity", "bigserial", "snowflake", "snowflake_db", "uuid4", "uuid7"},
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


def test_bad_out_directory_fails_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unusable output directory is refused up front, not with a traceback after the whole
    run that loses the table."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    started = time.perf_counter()
    status = main(["compare", "--rows", "100000", "--out", str(blocker / "out"), "--no-progress"])
    assert status == 2 and time.perf_counter() - started < 5  # 100,000 rows were never inserted
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot be written" in err, err


def test_out_without_matplotlib_fails_before_the_run(tmp_path: Path) -> None:
    script = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from idfields.cli import main\n"
        f"sys.exit(main(['compare', '--rows', '100000', '--out', {str(tmp_path)!r}]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "pip install 'idfields[compare]'" in done.stderr
