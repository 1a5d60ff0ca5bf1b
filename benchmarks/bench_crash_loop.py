"""A crash-looping fleet on PostgreSQL: restarts per second sustained, with zero duplicates.

Workers lease a snowflake node, issue IDs and are SIGKILLed once they have (see
``benchmarks.crash_loop``); the target is 100 restarts per second without a restart finding no
node. ``make bench`` runs 60 s of it (the quick mode 3 s); the 10-minute figure is
``python -m benchmarks.crash_loop URL --rate 100 --seconds 600``.
"""

from __future__ import annotations

from sqlalchemy import create_engine

from benchmarks.crash_loop import run as crash_loop
from benchmarks.report import run_alone
from benchmarks.rows import Row, make_row
from benchmarks.servers import sqlalchemy_url
from idfields.sqlalchemy_ext.coordination import SQLAlchemyDatabase
from idfields.sqlalchemy_ext.tables import metadata

GROUP = "crash loop (PostgreSQL, snowflake, 8 workers alive)"


def run(quick: bool = False) -> list[Row]:
    url = sqlalchemy_url("postgresql")
    metadata.create_all(create_engine(url))
    rate, seconds = (20.0, 3.0) if quick else (100.0, 60.0)
    result = crash_loop(
        lambda: SQLAlchemyDatabase(create_engine(url)),
        restarts=round(rate * seconds),
        rate=rate,
        workers=8,
    )
    note = (
        f"{result.restarts:,} SIGKILL restarts in {result.seconds:.1f} s, {result.no_node} "
        f"found no node, {result.duplicates} duplicates in {result.ids:,} IDs"
    )
    return [
        make_row(GROUP, "target rate", 100.0, "restarts/s", None),
        make_row(
            GROUP,
            "restarts sustained",
            result.restarts_per_s,
            "restarts/s",
            "target rate",
            1.0,
            higher_is_better=True,
            note=note,
        ),
        make_row(GROUP, "duplicate IDs", float(result.duplicates), "ids", None, note=note),
        make_row(GROUP, "restarts that found no node", float(result.no_node), "restarts", None),
    ]


if __name__ == "__main__":
    run_alone(run)
