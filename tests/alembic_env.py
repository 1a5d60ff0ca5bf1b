"""A throwaway Alembic environment in a test's tmp_path (never in the package).

``env.py`` registers the idfields operations and targets the idfields metadata (for
autogenerate); one migration, revision ``0001``, holds the ``op`` calls the test names.
"""

from __future__ import annotations

import io
from pathlib import Path

from alembic.config import Config

ENV_PY = """
from alembic import context
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

import idfields.migrations.alembic  # registers the operations
from idfields.sqlalchemy_ext import metadata

config = context.config
url = config.get_main_option("sqlalchemy.url")
if context.is_offline_mode():
    context.configure(url=url, target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    with create_engine(url, poolclass=NullPool).connect() as connection:
        context.configure(connection=connection, target_metadata=metadata)
        with context.begin_transaction():
            context.run_migrations()
"""


def migration(upgrade: str, downgrade: str) -> str:
    """The text of migration ``0001`` running one ``op`` call each way."""
    return f'''
"""idfields"""
from idfields.migrations.alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    {upgrade}


def downgrade() -> None:
    {downgrade}
'''


def alembic_config(tmp_path: Path, url: str, migration_py: str) -> tuple[Config, io.StringIO]:
    """The config of an environment holding ``migration_py``, and the buffer ``--sql`` writes."""
    scripts = tmp_path / "migrations"
    (scripts / "versions").mkdir(parents=True)
    (scripts / "env.py").write_text(ENV_PY)
    (scripts / "versions" / "0001_idfields.py").write_text(migration_py)
    output = io.StringIO()
    config = Config(output_buffer=output)
    config.set_main_option("script_location", str(scripts))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config, output
