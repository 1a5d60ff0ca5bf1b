"""SQLAlchemy insertmanyvalues: ``session.execute(insert(Model), rows)`` with ``id_column`` keys
against the database's own auto-increment (``Identity()`` on Postgres, AUTO_INCREMENT on MariaDB).

App-side IDs travel in the INSERT like any other column, so the target is no slower than the
database numbering its rows (ratio <= 1.0). Servers come from ``IDFIELDS_TEST_DATABASE_URL`` and
``IDFIELDS_TEST_MYSQL_URL`` (the test defaults otherwise); tables are created and dropped here.
``python -m benchmarks.bench_sqlalchemy [--quick]``.
"""

from __future__ import annotations

import os
import time

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from benchmarks.report import run_alone
from benchmarks.rows import Row
from idfields.nodes import StaticNode
from idfields.sqlalchemy_ext import configure, get_generator, id_column

SERVERS = {
    "postgresql": ("IDFIELDS_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"),
    "mysql": ("IDFIELDS_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test"),
}
DRIVERS = {"postgresql": "postgresql+psycopg", "postgres": "postgresql+psycopg"}
DRIVERS |= {"mysql": "mysql+pymysql", "mariadb": "mysql+pymysql"}
BASELINE = {"postgresql": "Identity() BIGINT", "mysql": "AUTO_INCREMENT BIGINT"}


class Base(DeclarativeBase):
    pass


class KSorted(Base):
    __tablename__ = "idf_bench_sa_ksorted"
    id: Mapped[int] = id_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(40))
    amount: Mapped[int] = mapped_column(sa.Integer)


class AutoIncrement(Base):
    __tablename__ = "idf_bench_sa_auto"
    id: Mapped[int] = mapped_column(sa.BigInteger, sa.Identity(), primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(40))
    amount: Mapped[int] = mapped_column(sa.Integer)


def _url(vendor: str) -> str:
    env, default = SERVERS[vendor]
    raw = os.environ.get(env, default)
    scheme, rest = raw.split("://", 1)
    return f"{DRIVERS.get(scheme, scheme)}://{rest}"


def _seconds(engine: sa.Engine, model: type[Base], rows: list[dict[str, object]]) -> float:
    """One timed ``session.execute(insert(model), rows)`` + commit into an empty table."""
    with engine.begin() as conn:
        conn.execute(sa.delete(model.__table__))
    with Session(engine) as session:
        started = time.perf_counter()
        session.execute(sa.insert(model), rows)
        session.commit()
        return time.perf_counter() - started


def _vendor_rows(vendor: str, count: int, repeats: int) -> list[Row]:
    engine = sa.create_engine(_url(vendor))
    try:
        Base.metadata.drop_all(engine)
        Base.metadata.create_all(engine)
        rows: list[dict[str, object]] = [{"name": f"row {i}", "amount": i} for i in range(count)]
        timings: dict[type[Base], list[float]] = {KSorted: [], AutoIncrement: []}
        for _ in range(repeats):  # interleaved, best of each: both see the same server state
            for model, spent in timings.items():
                spent.append(_seconds(engine, model, rows))
        Base.metadata.drop_all(engine)
    finally:
        engine.dispose()
    group = f"sqlalchemy insertmanyvalues ({vendor}, {count:,} rows)"
    baseline = BASELINE[vendor]
    return [
        Row(
            group=group,
            name=baseline,
            value=min(timings[AutoIncrement]) / count * 1e6,
            unit="us/row",
            baseline=None,
            target=None,
        ),
        Row(
            group=group,
            name="id_column (snowflake)",
            value=min(timings[KSorted]) / count * 1e6,
            unit="us/row",
            baseline=baseline,
            target=1.0,
        ),
    ]


def run(quick: bool = False) -> list[Row]:
    count, repeats = (10_000, 1) if quick else (100_000, 3)
    configure(source=lambda layout: StaticNode(1))
    get_generator("snowflake")  # the node is taken outside the timed inserts
    try:
        return [row for vendor in SERVERS for row in _vendor_rows(vendor, count, repeats)]
    finally:
        configure()


if __name__ == "__main__":
    run_alone(run)
