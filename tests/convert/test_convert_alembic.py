"""``op.convert_to_ksorted_id`` / ``op.restore_auto_increment``: online and offline (--sql)."""

from __future__ import annotations

import io

import psycopg
import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from databases import DbUrl

import idfields.migrations.alembic  # noqa: F401  (registers the operations)
from idfields.migrations import convert


def test_online_forwards_and_back(postgres_url: str) -> None:
    url = DbUrl.parse(postgres_url)
    engine = sa.create_engine(url.sqlalchemy_url())
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("DROP TABLE IF EXISTS al_child, al_parent")
            conn.exec_driver_sql("CREATE TABLE al_parent (id serial PRIMARY KEY)")
            conn.exec_driver_sql(
                "CREATE TABLE al_child (id serial PRIMARY KEY, "
                "parent_id integer REFERENCES al_parent (id))"
            )
            conn.exec_driver_sql("INSERT INTO al_parent SELECT FROM generate_series(1, 5)")
            op = Operations(MigrationContext.configure(conn))
            op.convert_to_ksorted_id("al_parent", lock_timeout="2s")  # type: ignore[attr-defined]
            types = dict(
                conn.exec_driver_sql(
                    "SELECT table_name, data_type FROM information_schema.columns WHERE "
                    "table_name IN ('al_parent', 'al_child') "
                    "AND column_name IN ('id', 'parent_id') "
                    "AND NOT (table_name = 'al_child' AND column_name = 'id')"
                ).fetchall()
            )
            assert types == {"al_parent": "bigint", "al_child": "bigint"}
            conn.exec_driver_sql("INSERT INTO al_parent VALUES (%s)", (2**60,))
            op.restore_auto_increment("al_parent")  # type: ignore[attr-defined]
            (new,) = conn.exec_driver_sql(
                "INSERT INTO al_parent DEFAULT VALUES RETURNING id"
            ).fetchone()  # type: ignore[misc]
            assert new > 2**60
            conn.exec_driver_sql("DROP TABLE al_child, al_parent")
    finally:
        engine.dispose()


def test_offline_needs_assume_and_runs(postgres_url: str) -> None:
    buffer = io.StringIO()
    context = MigrationContext.configure(
        dialect_name="postgresql", opts={"as_sql": True, "output_buffer": buffer}
    )
    op = Operations(context)
    with pytest.raises(ValueError, match="assume=KeyInfo"):
        op.convert_to_ksorted_id("off line")  # type: ignore[attr-defined]
    key = convert.KeyInfo(
        "postgresql",
        None,
        "off line",
        kind="identity",
        references=(convert.Reference(None, "off_child", "parent_id", "fk"),),
    )
    op.convert_to_ksorted_id("off line", assume=key)  # type: ignore[attr-defined]
    script = buffer.getvalue()
    assert 'LOCK TABLE "off_child", "off line"' in script and "DO $idfields$" in script
    assert "-- ACCESS EXCLUSIVE, rewrites the table" in script

    with psycopg.connect(**DbUrl.parse(postgres_url).psycopg_kwargs(), autocommit=True) as conn:
        conn.execute('DROP TABLE IF EXISTS off_child, "off line"')
        conn.execute(
            'CREATE TABLE "off line" (id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY)'
        )
        conn.execute('CREATE TABLE off_child (parent_id integer REFERENCES "off line" (id))')
        conn.execute('INSERT INTO "off line" DEFAULT VALUES')
        with conn.transaction():
            conn.execute(script.encode())
        assert conn.execute(
            "SELECT data_type FROM information_schema.columns WHERE table_name = 'off_child'"
        ).fetchone() == ("bigint",)
        conn.execute('DROP TABLE off_child, "off line"')
