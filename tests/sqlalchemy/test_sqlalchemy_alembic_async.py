"""The idfields operations in an async project: ``alembic init -t async``, as the FastAPI how-to
sets it up, where the migrations run through ``connection.run_sync`` on asyncpg or psycopg's
async driver (each sends statements its own way: asyncpg prepares every one, in ``$1`` style).

A real project in ``tmp_path``, driven by the ``alembic`` command as a user runs it: upgrade,
look at the database, downgrade, look again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import databases
import pytest
import sqlalchemy as sa

from idfields import sql

REVISION = '''
"""idfields in an async project"""
import sqlalchemy as sa

from idfields.migrations.alembic import op

revision = "0001"
down_revision = None


def upgrade() -> None:
{upgrade}


def downgrade() -> None:
{downgrade}
'''

FUNCTIONS = (
    f"""
    op.create_idfields_tables()
    op.install_id_functions("{sql.VERSION}")
""",
    f"""
    op.drop_id_functions("{sql.VERSION}")
    op.drop_idfields_tables()
""",
)

CONVERSION = (
    """
    op.create_table("async_parent", sa.Column("id", sa.Integer, primary_key=True))
    op.create_table(
        "async_child",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("parent_id", sa.Integer, sa.ForeignKey("async_parent.id")),
    )
    op.execute("INSERT INTO async_parent (id) SELECT pg_catalog.generate_series(1, 3)")
    op.execute("INSERT INTO async_child (parent_id) VALUES (2)")
    op.convert_to_ksorted_id("async_parent")
""",
    """
    op.restore_auto_increment("async_parent")
    op.execute("INSERT INTO async_parent DEFAULT VALUES")
    op.drop_table("async_child")
    op.drop_table("async_parent")
""",
)

Project = Callable[[tuple[str, str]], None]


def alembic(project: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "alembic", *args],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


pytestmark = pytest.mark.postgres


@pytest.fixture(params=["asyncpg", "psycopg"])
def engine(
    request: pytest.FixtureRequest, fresh_database: Callable[[str], str]
) -> Iterator[sa.Engine]:
    """A sync engine on an empty PostgreSQL database; ``.info["async_url"]`` its async URL."""
    url = databases.DbUrl.parse(fresh_database("postgresql")).sqlalchemy_url()
    created = sa.create_engine(url)
    created.info = {"async_url": url.replace("+psycopg://", f"+{request.param}://")}
    yield created
    created.dispose()


@pytest.fixture
def project(engine: sa.Engine, tmp_path: Path) -> Project:
    """``alembic init -t async`` on the engine's database; called with (upgrade, downgrade), it
    writes that revision."""
    alembic(tmp_path, "init", "-t", "async", "migrations")
    ini = tmp_path / "alembic.ini"
    url = str(engine.info["async_url"]).replace("%", "%%")
    lines = ini.read_text().splitlines()
    ini.write_text(
        "\n".join(
            f"sqlalchemy.url = {url}" if line.startswith("sqlalchemy.url =") else line
            for line in lines
        )
    )

    def write(body: tuple[str, str]) -> None:
        text = REVISION.format(upgrade=body[0].rstrip(), downgrade=body[1].rstrip())
        (tmp_path / "migrations" / "versions" / "0001_idfields.py").write_text(text)

    return write


def test_install_and_drop_id_functions(engine: sa.Engine, project: Project, tmp_path: Path) -> None:
    project(FUNCTIONS)
    alembic(tmp_path, "upgrade", "head")
    with engine.connect() as conn:
        comment = conn.scalar(sa.text("SELECT obj_description('idfields'::regnamespace)"))
        assert comment == f"idfields SQL {sql.VERSION}"
        made = conn.scalar(sa.text("SELECT idfields.next_snowflake()"))
        assert made is not None and made > 2**40
        conn.rollback()
    alembic(tmp_path, "downgrade", "base")
    inspector = sa.inspect(engine)
    assert set(inspector.get_table_names()) == {"alembic_version"}
    assert "idfields" not in inspector.get_schema_names()


def test_convert_to_ksorted_id_and_back(
    engine: sa.Engine, project: Project, tmp_path: Path
) -> None:
    project(CONVERSION)
    alembic(tmp_path, "upgrade", "head")
    columns = (
        "SELECT table_name || '.' || column_name, data_type, column_default IS NOT NULL "
        "FROM information_schema.columns WHERE table_name IN ('async_parent', 'async_child') "
        "ORDER BY 1"
    )
    with engine.connect() as conn:
        assert conn.execute(sa.text(columns)).all() == [
            ("async_child.id", "integer", True),
            ("async_child.parent_id", "bigint", False),
            ("async_parent.id", "bigint", False),  # the IDs come from the application now
        ]
        assert conn.scalars(sa.text("SELECT id FROM async_parent ORDER BY id")).all() == [1, 2, 3]
    alembic(tmp_path, "downgrade", "-1")  # restores the serial default, then drops the tables
    with engine.connect() as conn:
        assert conn.scalar(sa.text("SELECT count(*) FROM alembic_version")) == 0
    assert "async_parent" not in sa.inspect(engine).get_table_names()
