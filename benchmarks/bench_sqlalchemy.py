"""SQLAlchemy insertmanyvalues: ``session.execute(insert(Model), rows)`` with ``id_column`` keys
against the database's own auto-increment (``Identity()`` on Postgres, AUTO_INCREMENT on MariaDB).

Both sides run on the same engine, interleaved (the order alternating), each into an emptied
table; the value is the best run, the note the medians. Without RETURNING, SQLAlchemy hands the
rows to the driver's executemany on both sides (psycopg 3: one pipelined INSERT per row; PyMySQL:
rewritten into multi-row VALUES), so neither side batches where the other cannot. Per row, the
app-side key costs SQLAlchemy one default call and one more bound value (``construct_params``,
bind processors) and the driver one more value to dump or escape; the profile shows nothing else.
That extra value is the price of an app-side key on this path, so the ratio stays a little above
1.0 (the baseline's key costs the client nothing). Servers come from ``IDFIELDS_TEST_DATABASE_URL``
and ``IDFIELDS_TEST_MYSQL_URL`` (the test defaults otherwise); tables are created and dropped here.
``python -m benchmarks.bench_sqlalchemy [--quick]``.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from benchmarks.report import run_alone
from benchmarks.rows import Row
from benchmarks.servers import SERVERS, sqlalchemy_url
from benchmarks.timing import Timing, interleaved, per_row_rows, timed
from idfields.nodes import StaticNode
from idfields.sqlalchemy_ext import configure, get_generator, id_column

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


def _seconds(engine: sa.Engine, model: type[Base], rows: list[dict[str, object]]) -> Timing:
    """Wall and client CPU seconds of one ``session.execute(insert(model), rows)`` + commit into an
    emptied table."""
    table = engine.dialect.identifier_preparer.format_table(model.__table__)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"TRUNCATE TABLE {table}")
    with Session(engine) as session:

        def insert() -> None:
            session.execute(sa.insert(model), rows)
            session.commit()

        return timed(insert)


def _vendor_rows(vendor: str, count: int, repeats: int) -> list[Row]:
    engine = sa.create_engine(sqlalchemy_url(vendor))
    try:
        Base.metadata.drop_all(engine)
        Base.metadata.create_all(engine)
        rows: list[dict[str, object]] = [{"name": f"row {i}", "amount": i} for i in range(count)]
        models: list[type[Base]] = [KSorted, AutoIncrement]
        timings = interleaved(models, repeats, lambda model: _seconds(engine, model, rows))
        Base.metadata.drop_all(engine)
    finally:
        engine.dispose()
    group = f"sqlalchemy insertmanyvalues ({vendor}, {count:,} rows)"
    baseline = (BASELINE[vendor], timings[AutoIncrement])
    return per_row_rows(group, count, baseline, ("id_column (snowflake)", timings[KSorted]), 1.0)


def run(quick: bool = False) -> list[Row]:
    count, repeats = (10_000, 2) if quick else (100_000, 6)
    configure(source=lambda layout: StaticNode(1))
    get_generator("snowflake")  # the node is taken outside the timed inserts
    try:
        return [row for vendor in SERVERS for row in _vendor_rows(vendor, count, repeats)]
    finally:
        configure()


if __name__ == "__main__":
    run_alone(run)
