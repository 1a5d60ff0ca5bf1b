"""The idfields tables in a schema other than the connection's default, as SQLAlchemy puts them.

``MetaData(schema="app")`` puts the idfields tables beside the models in ``app``, and an engine's
``schema_translate_map`` moves them where it moves every table: the lease adapter (leases,
launches, counters) and the install of the database functions must use those tables. The schema
is a PostgreSQL schema, or on MariaDB another database of the same server (a scratch one here).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator

import databases
import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import idfields.migrations.alembic  # noqa: F401  (registers the operations)
from idfields import sql
from idfields.coordination import LeaseSource, next_value, record_launch
from idfields.errors import TablesMissing
from idfields.layouts import get_layout
from idfields.sqlalchemy_ext import SQLAlchemyDatabase, add_tables, configure, id_column
from idfields.sqlalchemy_ext import metadata as idfields_metadata


@pytest.fixture(params=["postgresql", "mysql"])
def app_schema(
    request: pytest.FixtureRequest, fresh_database: Callable[[str], str]
) -> Iterator[tuple[sa.Engine, str]]:
    """An engine on an empty database, and the name of an empty schema beside its default one."""
    url = databases.DbUrl.parse(fresh_database(request.param))
    engine = sa.create_engine(url.sqlalchemy_url())
    if request.param == "postgresql":
        with engine.begin() as conn:
            conn.exec_driver_sql('CREATE SCHEMA "App"')
        schema = "App"  # a name that needs quoting
    else:
        schema = databases.DbUrl.parse(fresh_database("mysql")).database
    yield engine, schema
    engine.dispose()


def tables_in(schema: str) -> sa.MetaData:
    """The idfields tables on a ``MetaData(schema=schema)``."""
    made = sa.MetaData(schema=schema)
    add_tables(made)
    return made


def _counts(engine: sa.Engine, schema: str) -> tuple[int, int]:
    """Lease rows and launch rows in ``schema``'s idfields tables."""
    launch, lease, _ = add_tables(sa.MetaData(schema=schema))
    with engine.connect() as conn:
        return (
            conn.scalar(sa.select(sa.func.count()).select_from(lease)) or 0,
            conn.scalar(sa.select(sa.func.count()).select_from(launch)) or 0,
        )


def test_models_in_a_metadata_schema_lease_from_it(app_schema: tuple[sa.Engine, str]) -> None:
    engine, schema = app_schema

    class Base(DeclarativeBase):
        metadata = sa.MetaData(schema=schema)

    class Order(Base):
        __tablename__ = "schema_orders"
        id: Mapped[int] = id_column()
        note: Mapped[str] = mapped_column(sa.String(20), default="")

    try:
        Base.metadata.create_all(engine)
        assert Base.metadata.tables[f"{schema}.idfields_node_lease"].schema == schema
        database = SQLAlchemyDatabase(engine, schema=schema)
        configure(source=LeaseSource(database))
        with Session(engine) as session, session.begin():
            session.add(Order())
        assert record_launch(database, "v1") == 1
        assert next_value(database, "orders") == 1
        assert _counts(engine, schema) == (1, 1)
        configure()
        database.dispose()
    finally:
        Base.registry.dispose()


def test_schema_translate_map_moves_the_tables_and_the_leases(
    app_schema: tuple[sa.Engine, str],
) -> None:
    base, schema = app_schema
    engine = base.execution_options(schema_translate_map={None: schema})
    idfields_metadata.create_all(engine)
    database = SQLAlchemyDatabase(engine)  # follows the map, as create_all did
    try:
        LeaseSource(database).acquire(get_layout("snowflake"))
        assert record_launch(database, "v1") == 1
        assert _counts(base, schema) == (1, 1)
    finally:
        database.dispose()


def test_tables_missing_names_the_schema_option(app_schema: tuple[sa.Engine, str]) -> None:
    engine, schema = app_schema
    tables_in(schema).create_all(engine)
    database = SQLAlchemyDatabase(engine)
    try:
        with pytest.raises(TablesMissing, match=r"SQLAlchemyDatabase\(engine, schema="):
            record_launch(database, "v1")
    finally:
        database.dispose()


@pytest.mark.postgres
def test_install_id_functions_finds_the_tables_of_the_target_metadata(
    fresh_database: Callable[[str], str],
) -> None:
    """``alembic upgrade`` with ``target_metadata = Base.metadata``: the functions lease from the
    schema the metadata puts the tables in, which the search_path need not hold."""
    url = databases.DbUrl.parse(fresh_database("postgresql")).sqlalchemy_url()
    engine = sa.create_engine(url)
    target = tables_in("App")
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql('CREATE SCHEMA "App"')
            target.create_all(conn)
            op = Operations(MigrationContext.configure(conn, opts={"target_metadata": target}))
            op.install_id_functions(sql.VERSION)  # type: ignore[attr-defined]
            assert conn.scalar(sa.text("SELECT idfields.lease_table()::text")) == (
                '"App".idfields_node_lease'
            )
            assert conn.scalar(sa.text("SELECT idfields.next_snowflake()")) > 2**40
            assert conn.scalar(sa.text('SELECT count(*) FROM "App".idfields_node_lease')) == 1
    finally:
        engine.dispose()


def test_the_nodes_command_reads_the_schema_it_is_given(
    app_schema: tuple[sa.Engine, str],
) -> None:
    engine, schema = app_schema
    tables_in(schema).create_all(engine)
    database = SQLAlchemyDatabase(engine, schema=schema)
    assignment = LeaseSource(database).acquire(get_layout("snowflake"))
    url = engine.url.render_as_string(hide_password=False)
    command = [sys.executable, "-m", "idfields.sqlalchemy_ext", "nodes", url]
    try:
        shown = subprocess.run([*command, "--schema", schema], capture_output=True, text=True)
        assert shown.returncode == 0, shown.stderr
        assert f" {assignment.values['node']} " in shown.stdout, shown.stdout
        unqualified = subprocess.run(command, capture_output=True, text=True)
        assert unqualified.returncode == 2 and "schema=" in unqualified.stderr
    finally:
        assert assignment.release is not None
        assignment.release(0)
        database.dispose()
