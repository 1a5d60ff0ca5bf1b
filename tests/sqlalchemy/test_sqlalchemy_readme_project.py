"""A fresh SQLAlchemy + Alembic project built exactly from the SQLAlchemy tutorial.

The page's own blocks (models.py, ``alembic init``, autogenerate, upgrade, ``alembic check``,
the app) run as tests/test_readme.py runs them; this test then looks at what they left: the
first revision creates the idfields tables and drops nothing, and the rows carry our keys. The
app then runs a second time, as a user re-running it would, and prints the same answer.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import databases
import pytest
import readme_blocks
import sqlalchemy as sa

from idfields.layouts import get_layout

TABLES = ("idfields_launch", "idfields_node_lease", "idfields_counter")


@pytest.mark.slow  # a project of its own, run in processes of its own
@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_readme_project(db: str, tmp_path: Path, fresh_database: Callable[[str], str]) -> None:
    section = readme_blocks.section("docs/tutorials/sqlalchemy.md", "(top)")
    if db == "sqlite":
        url = sqlalchemy_url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    else:
        url = fresh_database(db)
        sqlalchemy_url = databases.DbUrl.parse(url).sqlalchemy_url()
    started_ns = time.time_ns()
    env = readme_blocks.environment(db, url, sqlalchemy_url)
    readme_blocks.run_section(section, db, tmp_path, env)
    (app,) = tmp_path.glob("readme_line_*.py")  # the page's app.py, as the harness wrote it
    again = subprocess.run(
        [sys.executable, str(app)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert again.returncode == 0 and again.stdout == "True True\n", again.stdout + again.stderr

    (revision,) = (tmp_path / "migrations" / "versions").glob("0001_*.py")
    upgrade = revision.read_text().split("def downgrade")[0]
    assert all(f"op.create_table('{table}'" in upgrade for table in TABLES), upgrade
    assert "drop_table" not in upgrade

    engine = sa.create_engine(sqlalchemy_url)
    try:
        with engine.connect() as conn:
            ids = conn.scalars(sa.text("SELECT id FROM orders")).all()
            line_order = conn.scalar(sa.text("SELECT order_id FROM order_lines"))
            leases = conn.scalar(sa.text("SELECT count(*) FROM idfields_node_lease"))
    finally:
        engine.dispose()
    assert len(ids) == 4 and line_order in ids and leases >= 1
    for value in ids:  # snowflake IDs of this test's time, not AUTO_INCREMENT's 1, 2
        assert started_ns - 10**9 <= get_layout("snowflake").decode(value).time_ns <= time.time_ns()
