"""The suite's tiers: a test reaching a server carries its marker (or ``-m`` could not leave it
out of the fast tier), and a session leaves nothing in the databases the test URLs name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pymysql  # type: ignore[import-untyped,unused-ignore]
import pytest
from databases import DbUrl
from leftovers import left_behind, objects

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import pytest

def test_unmarked(request):
    request.getfixturevalue("postgres_url")

@pytest.mark.postgres
def test_marked(request):
    request.getfixturevalue("postgres_url")

def test_no_server():
    pass
"""


def test_a_test_reaching_a_deselected_server_without_its_marker_fails(tmp_path: Path) -> None:
    """``-m 'not postgres'`` on a test that asks for the server at run time, unmarked: it fails
    naming the marker, where it would skip and hide from both tiers."""
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IDFIELDS_", "PYTEST_"))}
    plugins = ["-p", "tests.conftest", "-p", "no:randomly", "-p", "no:cacheprovider"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *plugins, "-p", "no:django", "-m", "not postgres", "-rf"],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])},
        capture_output=True,
        text=True,
        timeout=120,
    )
    summary = run.stdout.strip().splitlines()[-1]
    assert "1 failed, 1 passed, 1 deselected" in summary, run.stdout[-3000:] + run.stderr[-3000:]
    assert "test_unmarked" in run.stdout and "without the postgres marker" in run.stdout


@pytest.mark.parametrize("fixture", ["postgres_url", "mysql_url"])
def test_what_a_session_adds_to_a_named_database_is_listed(
    request: pytest.FixtureRequest, fixture: str
) -> None:
    url: str = request.getfixturevalue(fixture)
    before = {url: objects(url)}
    assert left_behind(before) == []
    server = DbUrl.parse(url)
    if server.scheme == "postgresql":
        with psycopg.connect(**server.psycopg_kwargs(), autocommit=True) as conn:
            conn.execute("CREATE SCHEMA leftover_probe")
            conn.execute("CREATE TABLE leftover_probe.t (id bigint)")
            conn.execute(
                "CREATE FUNCTION leftover_probe.f() RETURNS int LANGUAGE sql AS 'SELECT 1'"
            )
            try:
                left = left_behind(before)
            finally:
                conn.execute("DROP SCHEMA leftover_probe CASCADE")
        assert left == [
            f"{url}: function leftover_probe.f()",
            f"{url}: relation leftover_probe.t",
            f"{url}: schema leftover_probe",
        ]
    else:
        with pymysql.connect(**server.pymysql_kwargs()) as conn, conn.cursor() as cursor:
            cursor.execute("CREATE TABLE leftover_probe (id bigint)")
            try:
                left = left_behind(before)
            finally:
                cursor.execute("DROP TABLE leftover_probe")
        assert left == [f"{url}: table leftover_probe"]
    assert left_behind(before) == []
