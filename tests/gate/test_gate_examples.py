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


@pytest.mark.parametrize("path", ["create_all", "alembic"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_example(
    example: Example,
    backend: str,
    path: str,
    sdists: dict[str, Path],
    tmp_path: Path,
    fresh_database: Callable[[str], str],
) -> None:
    """``create_all``: the example as a script, its own demo included. ``alembic``: its models
    through a project of ``alembic init`` (see gate_alembic.py)."""
    url = database(backend, tmp_path, fresh_database)
    root = sdists[example.package]
    if path == "create_all":
        script = tmp_path / f"{example.name}.py"
        script.write_text(example.source(root))
        run([str(script)], tmp_path, url)
        return
    (tmp_path / "gate_models.py").write_text(example.models(root))
    extra = ["import sqlmodel"] if example.package == "sqlmodel" else []
    driver = str(HERE / "gate_alembic.py")
    out = run([driver, str(tmp_path), url, example.metadata, *extra], tmp_path, url)
    assert "tables up, checked, down" in out
