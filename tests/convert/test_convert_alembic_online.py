"""The online path as Alembic operations: live on Postgres, and offline (--sql)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, cast

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from databases import DbUrl

import idfields.migrations.alembic  # noqa: F401  (registers the operations)
from idfields import StaticNode, make_generator
from idfields.migrations import convert

if TYPE_CHECKING:
    from idfields.migrations.alembic import IdFieldsOperations


def test_online_operations(postgres_url: str) -> None:
    engine = sa.create_engine(DbUrl.parse(postgres_url).sqlalchemy_url())
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("DROP TABLE IF EXISTS alo_child, alo_item")
            conn.exec_driver_sql("CREATE TABLE alo_item (id serial PRIMARY KEY, label text)")
            conn.exec_driver_sql(
                "CREATE TABLE alo_child (id serial PRIMARY KEY, "
                "item_id integer REFERENCES alo_item (id) ON DELETE CASCADE)"
            )
            conn.exec_driver_sql(
                "INSERT INTO alo_item (label) SELECT 'old' FROM generate_series(1, 1500)"
            )
            conn.exec_driver_sql("INSERT INTO alo_child (item_id) SELECT id FROM alo_item")
            before = conn.exec_driver_sql("SELECT id, label FROM alo_item ORDER BY id").all()
            conn.commit()
            context = MigrationContext.configure(conn)
            with context.begin_transaction():  # as env.py runs migrations
                op = _operations(context)
                op.add_bigint_shadow("alo_item", lock_timeout="2s")
                op.add_bigint_shadow("alo_item", lock_timeout="2s")  # idempotent
                op.backfill_bigint_shadow("alo_item", batch_pages=2)
                op.validate_shadow_constraints("alo_item")
                op.validate_shadow_constraints("alo_item")  # idempotent
                op.swap_to_bigint("alo_item", lock_timeout="2s")
            assert (
                conn.exec_driver_sql("SELECT id, label FROM alo_item ORDER BY id").all() == before
            )
            types = conn.exec_driver_sql(
                "SELECT table_name, data_type FROM information_schema.columns WHERE "
                "(table_name, column_name) IN (('alo_item', 'id'), ('alo_child', 'item_id')) "
                "ORDER BY 1"
            ).all()
            assert [tuple(row) for row in types] == [
                ("alo_child", "bigint"),
                ("alo_item", "bigint"),
            ]
            new = make_generator("snowflake", StaticNode(5))()
            conn.exec_driver_sql("INSERT INTO alo_item (id, label) VALUES (%s, 'new')", (new,))
            conn.exec_driver_sql("DELETE FROM alo_item WHERE id = 1")  # ON DELETE CASCADE kept
            assert conn.exec_driver_sql("SELECT count(*) FROM alo_child").scalar() == 1499
            conn.commit()
            with pytest.raises(sa.exc.IntegrityError):
                conn.exec_driver_sql("INSERT INTO alo_child (item_id) VALUES (%s)", (new + 1,))
            conn.rollback()
            with context.begin_transaction():
                _operations(context).restore_auto_increment("alo_item")
            back = conn.exec_driver_sql(
                "INSERT INTO alo_item (label) VALUES ('back') RETURNING id"
            ).scalar_one()
            assert back > new
            conn.exec_driver_sql("DROP TABLE alo_child, alo_item")
            conn.commit()
    finally:
        engine.dispose()


def _operations(context: MigrationContext) -> IdFieldsOperations:
    return cast("IdFieldsOperations", Operations(context))


def test_offline_script() -> None:
    buffer = io.StringIO()
    context = MigrationContext.configure(
        dialect_name="postgresql",
        opts={"as_sql": True, "output_buffer": buffer, "transactional_ddl": True},
    )
    op = _operations(context)
    key = convert.KeyInfo(
        "postgresql",
        None,
        "off item",
        references=(convert.Reference(None, "off_child", "item_id", "fk", nullable=True),),
        sequence="off item_id_seq",
    )
    with pytest.raises(ValueError, match="assume=KeyInfo"):
        op.add_bigint_shadow("off item")
    op.add_bigint_shadow("off item", assume=key)
    op.validate_shadow_constraints("off item", assume=key)
    op.swap_to_bigint("off item", assume=key)
    script = buffer.getvalue()
    assert 'ALTER TABLE "off item" ADD COLUMN IF NOT EXISTS "id_convert_to_bigint"' in script
    concurrently = script.index("CREATE UNIQUE INDEX CONCURRENTLY")
    assert script.rfind("COMMIT;", 0, concurrently) > script.rfind("BEGIN;", 0, concurrently)
    assert 'RENAME COLUMN "id_convert_to_bigint" TO "id"' in script
    with pytest.raises(ValueError, match="live connection"):
        op.backfill_bigint_shadow("off item", assume=key)
    with pytest.raises(ValueError, match="PostgreSQL"):
        op.add_bigint_shadow("t", assume=convert.KeyInfo("mysql", None, "t", kind="auto_increment"))
