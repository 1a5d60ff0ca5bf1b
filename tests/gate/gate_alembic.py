"""Run in a process of its own: a project made by ``alembic init`` (with the idfields hook in its
``env.py``) over ``gate_models.py``: autogenerate, upgrade, ``alembic check``, downgrade.

    python gate_alembic.py WORKDIR URL METADATA [IMPORT]

``METADATA`` is the models' MetaData as an expression in ``gate_models``; ``IMPORT`` a line the
revision template must add (SQLModel's types render as ``sqlmodel.sql.sqltypes.AutoString``,
so SQLModel's docs have users add ``import sqlmodel`` to ``script.py.mako``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import sqlalchemy as sa
from alembic import command

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: alembic_env
import alembic_env


def main(workdir: Path, url: str, metadata: str, extra_import: str = "") -> None:
    sys.path.insert(0, str(workdir))  # gate_models
    config = alembic_env.stock_project(workdir, url, f"__import__('gate_models').{metadata}")
    if extra_import:
        mako = workdir / "migrations" / "script.py.mako"
        mako.write_text(
            mako.read_text().replace(
                "import sqlalchemy as sa\n", f"import sqlalchemy as sa\n{extra_import}\n"
            )
        )
    command.revision(config, "models", autogenerate=True, rev_id="0001")
    command.upgrade(config, "head")
    command.check(config)
    engine = sa.create_engine(url)
    try:
        made = set(sa.inspect(engine).get_table_names())
        command.downgrade(config, "base")
        left = set(sa.inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()
    if left:
        raise SystemExit(f"downgrade left tables: {sorted(left)}")
    print(f"gate: {len(made) - 1} tables up, checked, down")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], *sys.argv[4:])
