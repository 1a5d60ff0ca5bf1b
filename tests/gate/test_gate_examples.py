"""The gate: SQLAlchemy's ORM examples and SQLModel's tutorial models on our keys, on each
backend, through ``create_all`` (the example's own demo) and through Alembic (autogenerate,
upgrade, ``alembic check``, downgrade). Each runs in a process of its own, as a user runs it:
the models of one example never meet another's in a registry."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import databases
import pytest
from gate_examples import EXAMPLES, Example

pytestmark = pytest.mark.gate
HERE = Path(__file__).resolve().parent
BACKENDS = ["sqlite", "postgresql", "mysql"]


def database(backend: str, tmp_path: Path, fresh_database: Callable[[str], str]) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'gate.sqlite3'}"
    return databases.DbUrl.parse(fresh_database(backend)).sqlalchemy_url()


def run(args: list[str], cwd: Path, url: str) -> str:
    env = {**os.environ, "GATE_URL": url, "IDFIELDS_DEVELOPMENT": "1"}
    done = subprocess.run(
        [sys.executable, "-W", "error::idfields.errors.NarrowColumnWarning", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode:
        pytest.fail(
            f"{' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}", pytrace=False
        )
    return done.stdout


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_example_runs_with_create_all(
    example: Example,
    backend: str,
    sdists: dict[str, Path],
    tmp_path: Path,
    fresh_database: Callable[[str], str],
) -> None:
    script = tmp_path / f"{example.name}.py"
    script.write_text(example.source(sdists[example.package]))
    run([str(script)], tmp_path, database(backend, tmp_path, fresh_database))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_example_through_alembic(
    example: Example,
    backend: str,
    sdists: dict[str, Path],
    tmp_path: Path,
    fresh_database: Callable[[str], str],
) -> None:
    (tmp_path / "gate_models.py").write_text(example.models(sdists[example.package]))
    extra = ["import sqlmodel"] if example.package == "sqlmodel" else []
    url = database(backend, tmp_path, fresh_database)
    out = run(
        [str(HERE / "gate_alembic.py"), str(tmp_path), url, example.metadata, *extra], tmp_path, url
    )
    assert "tables up, checked, down" in out
