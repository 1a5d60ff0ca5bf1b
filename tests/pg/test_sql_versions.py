"""Moving a database between SQL versions: the install operations read the version the database
records, so an upgrade or a downgrade in place leaves exactly what a fresh install of the target
leaves (every function's definition, every grant and comment), and a version the package does
not know, named or recorded, is refused before anything changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import alembic_env
import psycopg
import pytest
from alembic import command
from databases import DbUrl

from idfields import sql
from tests.pg.next_version import next_version
from tests.pg.test_install_ops import django_connection, run, schema_exists

__all__ = ["django_connection", "next_version"]  # fixtures, imported for the tests below

# Everything an install can change: the functions (definition, grants, comment), the view,
# the schema, and the idfields tables' grants, each with its ACL and comment.
SNAPSHOT = """
SELECT 'function ' || p.oid::regprocedure, pg_get_functiondef(p.oid), p.proacl::text,
    obj_description(p.oid, 'pg_proc')
FROM pg_proc AS p WHERE p.pronamespace = to_regnamespace('idfields')
UNION ALL
SELECT 'relation ' || c.oid::regclass, CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid) END,
    c.relacl::text, obj_description(c.oid, 'pg_class')
FROM pg_class AS c
WHERE c.relnamespace = to_regnamespace('idfields') OR c.relname LIKE 'idfields%'
UNION ALL
SELECT 'schema ' || n.nspname, NULL, n.nspacl::text, obj_description(n.oid, 'pg_namespace')
FROM pg_namespace AS n WHERE n.nspname = 'idfields'
"""


def snapshot(url: DbUrl) -> dict[str, tuple[Any, ...]]:
    with psycopg.connect(**url.psycopg_kwargs()) as conn:
        return {row[0]: tuple(row[1:]) for row in conn.execute(SNAPSHOT).fetchall()}


def fresh(url: DbUrl, version: str) -> dict[str, tuple[Any, ...]]:
    """What a fresh install of ``version`` leaves, in a scratch schema-free database."""
    with psycopg.connect(**url.psycopg_kwargs(), autocommit=True) as conn:
        conn.execute(sql.load(version).encode())
        taken = snapshot(url)
        conn.execute(sql.load_drop(version).encode())
    assert not schema_exists(url)
    return taken


def ids(conn: psycopg.Connection[Any], count: int = 200) -> list[int | None]:
    return [conn.execute("SELECT idfields.next_snowflake()").fetchone()[0] for _ in range(count)]  # type: ignore[index]


def test_the_next_version_changes_adds_and_drops_a_function(
    next_version: str, empty_database: DbUrl
) -> None:
    shipped, following = fresh(empty_database, sql.VERSION), fresh(empty_database, next_version)
    assert set(shipped) - set(following) == {"function idfields.take_traceid_ranges(bigint)"}
    assert set(following) - set(shipped) == {"function idfields.clock_s()"}
    both = shipped.keys() & following.keys()
    changed = {name for name in both if shipped[name] != following[name]}
    assert changed == {"function idfields.clock_us()", "schema idfields"}  # its comment
    assert following["function idfields.clock_s()"][1:] == ("{postgres=X/postgres}", "unix seconds")


def test_django_upgrade_and_downgrade_equal_fresh_installs(
    next_version: str, django_connection: Any, empty_database: DbUrl
) -> None:
    from idfields.migrations.django import InstallIdFunctions

    shipped, following = fresh(empty_database, sql.VERSION), fresh(empty_database, next_version)
    run(django_connection, InstallIdFunctions(sql.VERSION), "forwards")
    upgrade = InstallIdFunctions(next_version)  # no from_version: the database records it
    run(django_connection, upgrade, "forwards")
    assert snapshot(empty_database) == following
    run(django_connection, upgrade, "backwards")  # back to the version before it
    assert snapshot(empty_database) == shipped
    run(django_connection, InstallIdFunctions(sql.VERSION), "backwards")
    assert not schema_exists(empty_database)


NEXT_MIGRATION = '''
"""the next idfields SQL version"""
from idfields.migrations.alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.install_id_functions("{next}")


def downgrade() -> None:
    op.install_id_functions("{shipped}")
'''


def test_alembic_upgrade_and_downgrade_equal_fresh_installs(
    next_version: str, empty_database: DbUrl, tmp_path: Path
) -> None:
    shipped, following = fresh(empty_database, sql.VERSION), fresh(empty_database, next_version)
    first = alembic_env.migration(
        f'op.install_id_functions("{sql.VERSION}")', f'op.drop_id_functions("{sql.VERSION}")'
    )
    config, _ = alembic_env.alembic_config(tmp_path, empty_database.sqlalchemy_url(), first)
    (tmp_path / "migrations" / "versions" / "0002_next.py").write_text(
        NEXT_MIGRATION.format(next=next_version, shipped=sql.VERSION)
    )
    command.upgrade(config, "head")
    assert snapshot(empty_database) == following
    command.downgrade(config, "0001")
    assert snapshot(empty_database) == shipped
    command.downgrade(config, "base")
    assert not schema_exists(empty_database)


def test_alembic_offline_upgrade_guards_and_drops_the_leftovers(
    next_version: str, empty_database: DbUrl, tmp_path: Path
) -> None:
    following = fresh(empty_database, next_version)
    upgrade = alembic_env.migration(
        f'op.install_id_functions("{next_version}", lease_schema="public")', "pass"
    )
    config, output = alembic_env.alembic_config(tmp_path, empty_database.sqlalchemy_url(), upgrade)
    command.upgrade(config, "head", sql=True)
    script = output.getvalue()
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as conn:
        conn.execute(sql.load(sql.VERSION).encode())
        conn.execute(script.encode())
        assert snapshot(empty_database) == following
        conn.execute("COMMENT ON SCHEMA idfields IS 'idfields SQL 0009'")
        conn.execute("DROP TABLE alembic_version")  # the script creates it again
        with pytest.raises(psycopg.errors.RaiseException, match="does not know"):
            conn.execute(script.encode())


def test_a_downgrade_to_a_version_the_package_does_not_ship_is_refused(
    empty_database: DbUrl, tmp_path: Path
) -> None:
    """A session that issued IDs (and defined lastval()) keeps getting IDs: nothing changed."""
    steps = alembic_env.migration(
        f'op.install_id_functions("{sql.VERSION}")', 'op.install_id_functions("0000")'
    )
    config, _ = alembic_env.alembic_config(tmp_path, empty_database.sqlalchemy_url(), steps)
    command.upgrade(config, "head")
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as session:
        before = ids(session, 1)
        # An app's serial insert defines lastval(), which a mismatched hot path would read.
        session.execute("CREATE TEMP TABLE app_rows (id serial)")
        session.execute("INSERT INTO app_rows DEFAULT VALUES")
        with pytest.raises(ValueError, match=r"idfields has no SQL version '0000' .*: name one"):
            command.downgrade(config, "base")
        after = ids(session)
    assert None not in after and before + after == sorted(set(before + after))


@pytest.mark.parametrize("recorded", ["'idfields SQL 0009'", "'made by hand'"])
def test_a_database_holding_an_unknown_version_is_refused(
    django_connection: Any, empty_database: DbUrl, tmp_path: Path, recorded: str
) -> None:
    """Newer than this package (or not recorded at all): its leftovers are unknown, so neither
    operation replaces nor drops anything, and the session's IDs keep coming."""
    from idfields.migrations.django import InstallIdFunctions

    steps = alembic_env.migration(
        f'op.install_id_functions("{sql.VERSION}")', f'op.drop_id_functions("{sql.VERSION}")'
    )
    with psycopg.connect(**empty_database.psycopg_kwargs(), autocommit=True) as session:
        session.execute(sql.load(sql.VERSION).encode())
        before = ids(session, 1)
        session.execute(f"COMMENT ON SCHEMA idfields IS {recorded}".encode())
        taken = snapshot(empty_database)
        problem = "does not know" if "0009" in recorded else "records no idfields SQL version"
        with pytest.raises(ValueError, match=problem):
            run(django_connection, InstallIdFunctions(sql.VERSION), "forwards")
        with pytest.raises(ValueError, match=problem):
            run(django_connection, InstallIdFunctions(sql.VERSION), "backwards")
        config, _ = alembic_env.alembic_config(tmp_path, empty_database.sqlalchemy_url(), steps)
        with pytest.raises(ValueError, match=problem):
            command.upgrade(config, "head")
        assert snapshot(empty_database) == taken
        after = ids(session)
    assert None not in after and before + after == sorted(set(before + after))
