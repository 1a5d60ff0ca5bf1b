"""A throwaway Alembic environment in a test's tmp_path (never in the package).

``env.py`` registers the idfields operations and targets the idfields metadata (for
autogenerate); one migration, revision ``0001``, holds the ``op`` calls the test names.
"""

from __future__ import annotations

import io
from pathlib import Path

from alembic import command
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


# The edit docs/tutorials/sqlalchemy.md makes to env.py: the idfields autogenerate hook.
HOOK_IMPORT = "from idfields.migrations.alembic import process_revision_directives\n"
HOOK_ARG = (
    "target_metadata=target_metadata, process_revision_directives=process_revision_directives"
)


def stock_project(
    tmp_path: Path, url: str, target_metadata: str, template: str = "generic", hook: bool = True
) -> Config:
    """An Alembic project as ``alembic init`` makes it (its own ``env.py``, untouched but for
    ``target_metadata = <target_metadata>`` and, with ``hook``, the idfields autogenerate hook
    as the docs add it); migrations go in ``migrations/versions``."""
    scripts = tmp_path / "migrations"
    config = Config(str(tmp_path / "alembic.ini"))
    command.init(config, str(scripts), template=template)
    # No config file: env.py's fileConfig() would disable every logger of the test process.
    config = Config()
    config.set_main_option("script_location", str(scripts))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    env = scripts / "env.py"
    stock = env.read_text()
    if "target_metadata = None" not in stock:
        raise AssertionError("alembic init's env.py no longer sets target_metadata = None")
    edited = stock.replace("target_metadata = None", f"target_metadata = {target_metadata}")
    if hook:
        edited = HOOK_IMPORT + edited.replace("target_metadata=target_metadata", HOOK_ARG)
    env.write_text(edited)
    return config


def write_revision(
    config: Config, revision: str, down: str | None, upgrade: str, downgrade: str
) -> None:
    """A hand-written revision in ``config``'s project (bodies indented as function bodies)."""
    versions = Path(config.get_main_option("script_location") or "") / "versions"
    body = migration(upgrade, downgrade).replace('revision = "0001"', f'revision = "{revision}"')
    body = body.replace("down_revision = None", f"down_revision = {down!r}")
    (versions / f"{revision}_rev.py").write_text(body)
