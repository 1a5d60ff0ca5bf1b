"""SQLAlchemyDatabase runs the core coordination on its own connections, on every backend."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from idfields.coordination import LeaseSource, next_value
from idfields.layouts import get_layout
from idfields.sqlalchemy_ext import metadata
from idfields.sqlalchemy_ext._coordination import SQLAlchemyDatabase


@pytest.fixture
def tables(engine: sa.Engine) -> Iterator[sa.Engine]:
    metadata.drop_all(engine)
    metadata.create_all(engine)
    yield engine
    metadata.drop_all(engine)


def test_leases_and_counters_survive_the_callers_rollback(tables: sa.Engine) -> None:
    database = SQLAlchemyDatabase(tables)
    try:
        with Session(tables) as session, session.begin():
            session.execute(sa.select(1))
            first = LeaseSource(database).acquire(get_layout("snowflake"))
            second = LeaseSource(database).acquire(get_layout("snowflake"))
            assert next_value(database, "test") == 1
            session.rollback()
        assert first.values != second.values
        assert next_value(database, "test") == 2
        with tables.connect() as conn:
            held = conn.scalar(
                sa.select(sa.func.count()).select_from(metadata.tables["idfields_node_lease"])
            )
        assert held == 2
    finally:
        database.dispose()


def test_placeholders_and_literal_percent(tables: sa.Engine) -> None:
    database = SQLAlchemyDatabase(tables)
    try:
        result = database.execute("SELECT %s, '5%%', 'a:b'", ["x"])
        assert result.rows == [("x", "5%", "a:b")]
    finally:
        database.dispose()


WORKER = textwrap.dedent("""
    import sys
    import sqlalchemy as sa
    from idfields.coordination import LeaseSource
    from idfields.sqlalchemy_ext import configure, get_generator, id_default
    from idfields.sqlalchemy_ext._coordination import SQLAlchemyDatabase

    configure(source=LeaseSource(SQLAlchemyDatabase(sa.create_engine(sys.argv[1]))))
    default = id_default("snowflake")
    ids = [default() for _ in range(20000)]
    print(get_generator("snowflake").node["node"], min(ids), max(ids), len(set(ids)))
""")


@pytest.mark.slow
def test_two_processes_lease_different_nodes(tables: sa.Engine) -> None:
    """Django's adapter is another issue's; here two SQLAlchemy processes share the table."""
    url = tables.url.render_as_string(hide_password=False)
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, url], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [worker.communicate(timeout=60)[0].split() for worker in workers]
    assert all(worker.returncode == 0 for worker in workers)
    nodes = {int(result[0]) for result in results}
    assert len(nodes) == 2
    assert all(int(result[3]) == 20000 for result in results)
