"""App processes and the database functions lease one node space from one table. A schema per
tenant (django-tenants, a schema per customer) may hold its own copy of the idfields tables,
found first on the app's search_path, while the functions lease from the table fixed at their
install: the functions refuse a caller whose search_path finds another table, and an app
process on PostgreSQL refuses to lease from one."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from dbapi_database import DbApiDatabase
from psycopg import sql
from schema_ddl import create_tables

from idfields import NodeError, make_generator
from idfields.coordination import LeaseSource
from idfields.layouts import SNOWFLAKE_EPOCH, Layout
from tests.pg.conftest import Connect

EPOCH_MS = int(SNOWFLAKE_EPOCH.timestamp() * 1000)


@pytest.fixture
def tenant(connect: Connect) -> Iterator[str]:
    """A schema holding its own copy of the idfields tables."""
    admin = connect()
    schema = f"tenant_{secrets.token_hex(3)}"
    admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    admin.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
    for statement in create_tables("postgresql"):
        admin.execute(statement.encode())
    admin.execute("RESET search_path")
    yield schema
    admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def test_an_app_leasing_from_another_copy_of_the_lease_table_is_refused(
    connect: Connect, postgres_url: str, one_node: Layout, tenant: str
) -> None:
    """The app's connection runs with ``search_path = tenant, public``; a backend with the
    default search_path issues from the functions' table, ``public``'s, in the same tick. An
    app leasing from the tenant's table issues the backend's 10 IDs; it is refused, naming
    both tables."""
    admin = connect()
    tick = int(admin.execute("SELECT idfields.clock_ms() - %s", [EPOCH_MS]).fetchone()[0])
    database = DbApiDatabase("postgresql", postgres_url)
    database.execute(f'SET search_path = "{tenant}", public')
    clock = lambda: (EPOCH_MS + tick) * 1_000_000  # noqa: E731
    generator = make_generator(one_node, LeaseSource(database, clock=clock), clock=clock)
    app_ids: set[int] = set()
    refused = ""
    try:
        app_ids |= {generator() for _ in range(10)}
    except NodeError as error:
        refused = str(error)
    finally:
        generator.close()
        database.close()
    hook = sql.Identifier(f"next_{one_node.name}_at")
    query = sql.SQL("SELECT idfields.{}(%s) FROM generate_series(1, 10)").format(hook)
    backend_ids = {int(row[0]) for row in connect().execute(query, [tick]).fetchall()}
    assert len(app_ids & backend_ids) == 0
    assert f"{tenant}.idfields_node_lease" in refused
    assert "public.idfields_node_lease" in refused


def test_an_app_finding_the_functions_table_first_leases(
    connect: Connect, postgres_url: str, one_node: Layout, tenant: str
) -> None:
    """The tenant's copy later on the search_path than the functions' table: one table."""
    database = DbApiDatabase("postgresql", postgres_url)
    database.execute(f'SET search_path = public, "{tenant}"')
    generator = make_generator(one_node, LeaseSource(database))
    try:
        assert generator() > 0
    finally:
        generator.close()
        database.close()
