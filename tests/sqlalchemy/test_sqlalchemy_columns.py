"""IDs are made in Python before the INSERT, on every insert path, on all three backends."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sa_models import Base, Item, core_items
from sqlalchemy.orm import DeclarativeBase, Mapped, Session
from sqlalchemy.sql.schema import CallableColumnDefault

from idfields import sql
from idfields.errors import ConfigurationError
from idfields.layouts import get_layout
from idfields.sqlalchemy_ext import id_column, id_column_core, id_default, metadata

SNOWFLAKE = get_layout("snowflake")


@pytest.fixture
def db(engine: sa.Engine) -> Iterator[sa.Engine]:
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    yield engine
    Base.metadata.drop_all(engine)


class InsertLog:
    """The INSERT statements the driver receives, to prove the IDs travel with them."""

    def __init__(self, engine: sa.Engine) -> None:
        self.statements: list[tuple[str, Any]] = []
        sa.event.listen(engine, "before_cursor_execute", self._record)
        self._engine = engine

    def _record(self, conn: Any, cursor: Any, statement: str, params: Any, *args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT"):
            self.statements.append((statement, params))

    def close(self) -> None:
        sa.event.remove(self._engine, "before_cursor_execute", self._record)


def assert_fresh_ids(ids: list[int], count: int, started_ns: int) -> None:
    """Distinct, increasing in insert order, snowflake IDs of this test's time and node 0."""
    assert len(ids) == count
    assert ids == sorted(set(ids))
    for value in (ids[0], ids[-1]):
        decoded = SNOWFLAKE.decode(value)
        assert decoded.values["node"] == 0
        assert started_ns - 10**9 <= decoded.time_ns <= time.time_ns() + 10**9


def stored_names(engine: sa.Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.scalars(sa.select(Item.name).order_by(Item.name)))


def stored_ids(engine: sa.Engine, table: sa.Table) -> list[int]:
    with engine.connect() as conn:
        return list(conn.scalars(sa.select(table.c.id).order_by(table.c.name)))


def test_session_add_and_flush_send_the_ids_with_the_insert(db: sa.Engine) -> None:
    started = time.time_ns()
    log = InsertLog(db)
    with Session(db) as session:
        one = Item(name="a0")
        session.add(one)
        session.add_all([Item(name=f"a{i}") for i in range(1, 5)])
        session.flush()
        session.commit()
        ids = [
            one.id,
            *(item.id for item in session.scalars(sa.select(Item).where(Item.id != one.id))),
        ]
    log.close()
    stored = stored_ids(db, Item.__table__)  # type: ignore[arg-type]
    assert sorted(ids) == stored
    assert_fresh_ids(stored, 5, started)
    sent = str([params for _, params in log.statements])
    assert all(str(value) in sent for value in stored)


def test_insert_model_with_dicts_batches_with_insertmanyvalues(db: sa.Engine) -> None:
    started = time.time_ns()
    log = InsertLog(db)
    rows = [{"name": f"b{i:04d}"} for i in range(600)]
    with Session(db) as session:
        session.execute(sa.insert(Item), rows)
        returned = list(session.scalars(sa.insert(Item).returning(Item.id), [{"name": "c"}] * 3))
        session.commit()
    log.close()
    stored = stored_ids(db, Item.__table__)  # type: ignore[arg-type]
    assert_fresh_ids(stored[:600], 600, started)
    assert sorted(returned) == stored[600:]
    assert len(set(stored)) == 603
    assert len(log.statements) < 600 / 10  # batched: many rows per statement


def test_insert_model_keeps_explicit_ids_among_generated_ones(db: sa.Engine) -> None:
    started = time.time_ns()
    rows: list[dict[str, object]] = [{"name": f"m{i:03d}"} for i in range(40)]
    for index in (3, 17, 18, 39):
        rows[index]["id"] = 1000 + index
    with Session(db) as session:
        session.execute(sa.insert(Item), rows)
        session.commit()
    ids = stored_ids(db, Item.__table__)  # type: ignore[arg-type]
    stored = dict(zip(stored_names(db), ids, strict=True))
    explicit = {f"m{i:03d}": 1000 + i for i in (3, 17, 18, 39)}
    assert {name: stored[name] for name in explicit} == explicit
    assert "id" not in rows[0]  # the caller's dicts are not written to
    generated = [value for name, value in sorted(stored.items()) if name not in explicit]
    assert_fresh_ids(generated, 36, started)


def test_core_values_and_executemany(db: sa.Engine) -> None:
    started = time.time_ns()
    with db.begin() as conn:
        conn.execute(core_items.insert().values(name="d0000"))
        conn.execute(core_items.insert(), [{"name": f"d{i:04d}"} for i in range(1, 200)])
    assert_fresh_ids(stored_ids(db, core_items), 200, started)


def test_an_explicit_id_is_kept(db: sa.Engine) -> None:
    with Session(db) as session:
        session.add(Item(id=42, name="x"))
        session.commit()
    assert stored_ids(db, Item.__table__) == [42]  # type: ignore[arg-type]


def test_ddl_is_a_plain_bigint_without_autoincrement(engine: sa.Engine) -> None:
    ddl = str(sa.schema.CreateTable(core_items).compile(dialect=engine.dialect)).upper()
    assert "BIGINT" in ddl
    for word in ("SERIAL", "AUTO_INCREMENT", "AUTOINCREMENT", "IDENTITY"):
        assert word not in ddl


def test_id_default_is_a_plain_callable() -> None:
    default = id_default("snowflake")
    first, second = default(), default()
    assert 0 < first < second


def test_bad_arguments_name_the_fix() -> None:
    with pytest.raises(TypeError, match="set their own default"):
        id_column(default=lambda: 1)
    with pytest.raises(ValueError, match=r"generation='db': .* or use generation='app'"):
        id_column(layout="globalid", generation="db")
    with pytest.raises(ValueError, match="generation='server' is unknown; use 'app' or 'db'"):
        id_column_core(generation="server")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="configure"):
        id_default("no_such_layout")()


def test_db_generation_fetches_the_database_made_id(pg_engine: sa.Engine) -> None:
    with pg_engine.begin() as conn:  # the lease tables and the functions, as a migration would
        metadata.create_all(conn)
        conn.execution_options(no_parameters=True).exec_driver_sql(sql.load(sql.VERSION))

    class ServerBase(DeclarativeBase):
        pass

    class Row(ServerBase):
        __tablename__ = "idf_sa_server_item"
        id: Mapped[int] = id_column(generation="db")

    ServerBase.metadata.create_all(pg_engine)
    try:
        with Session(pg_engine) as session:
            rows = [Row(), Row()]
            session.add_all(rows)
            session.flush()
            assert rows[0].id < rows[1].id
            assert SNOWFLAKE.decode(rows[0].id).in_layout
    finally:
        ServerBase.metadata.drop_all(pg_engine)


def _made_in_python(column: sa.Column[Any]) -> list[int]:
    """Two IDs from ``column``'s default, called as SQLAlchemy calls it (with the context)."""
    default = column.default
    assert isinstance(default, CallableColumnDefault)
    return [default.arg(None), default.arg(None)]


def test_id_column_on_a_mixin_and_an_abstract_base_is_copied_per_model() -> None:
    """Declarative copies a mixin's or an abstract base's column into each model (SQLAlchemy 2.0
    and 2.1 alike); each copy keeps the default, the layout and the idfields tables."""

    class CopyBase(DeclarativeBase):
        pass

    class KeyMixin:
        id: Mapped[int] = id_column()

    class Keyed(CopyBase):
        __abstract__ = True
        id: Mapped[int] = id_column(layout="snowflake")

    class FromMixin(KeyMixin, CopyBase):
        __tablename__ = "idf_sa_from_mixin"

    class FromAbstract(Keyed):
        __tablename__ = "idf_sa_from_abstract"

    try:
        for model in (FromMixin, FromAbstract):
            column = model.__table__.c.id
            assert column.info == {"idfields": "snowflake"}
            first, second = _made_in_python(column)
            assert 0 < first < second
        assert {"idfields_node_lease", "idf_sa_from_mixin"} <= set(CopyBase.metadata.tables)
        engine = sa.create_engine("sqlite://")
        CopyBase.metadata.create_all(engine)
        with Session(engine) as session, session.begin():
            rows = [FromMixin(), FromAbstract(), FromMixin()]
            session.add_all(rows)
            session.flush()
            assert all(row.id > 2**40 for row in rows)
    finally:
        CopyBase.registry.dispose()


def test_to_metadata_copies_an_id_column_core_table() -> None:
    """``Table.to_metadata()`` (Alembic's batch mode, multi-tenant copies) keeps the default."""
    tenant = sa.MetaData()
    copy = core_items.to_metadata(tenant, schema="tenant")
    assert "idfields_node_lease" in tenant.tables  # the copy brings the tables too
    column = copy.c.id
    assert column.info == {"idfields": "snowflake"} and column.primary_key
    first, second = _made_in_python(column)
    assert 0 < first < second
