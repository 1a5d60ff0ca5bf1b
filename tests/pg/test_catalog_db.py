"""A user layout installed by its migration fills a SQLAlchemy ``generation="db"`` column."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import sqlalchemy as sa
from databases import DbUrl

from idfields.layouts import Layout, Node, Sequence, Timestamp
from idfields.sql.layouts import render_layout_function
from idfields.sqlalchemy_ext import id_column_core

CATALOGED = Layout(
    "cataloged",
    [Timestamp(41, unit="ms", epoch=datetime(2025, 1, 1, tzinfo=UTC)), Node(8), Sequence(14)],
)


def test_db_generated_column_of_an_installed_user_layout(
    pg_kwargs: dict[str, object], postgres_url: str
) -> None:
    create, drop = render_layout_function(CATALOGED)
    with psycopg.connect(**pg_kwargs, autocommit=True) as conn:  # type: ignore[arg-type]
        conn.execute(create.encode())
    table = sa.Table(
        "cataloged_rows",
        sa.MetaData(),
        id_column_core("id", layout=CATALOGED, generation="db"),
        sa.Column("n", sa.Integer),
    )
    engine = sa.create_engine(DbUrl.parse(postgres_url).sqlalchemy_url())
    try:
        with engine.begin() as conn:
            table.drop(conn, checkfirst=True)
            table.create(conn)
            insert = sa.insert(table)
            made = [conn.execute(insert.values(n=n)).inserted_primary_key[0] for n in range(3)]
            table.drop(conn)
    finally:
        engine.dispose()
        with psycopg.connect(**pg_kwargs, autocommit=True) as conn:  # type: ignore[arg-type]
            conn.execute(drop.encode())  # others drop the schema the functions live in
    assert made == sorted(set(made))
    decoded = CATALOGED.decode(made[0])
    assert decoded.in_layout and decoded.time is not None
    assert abs((decoded.time - datetime.now(UTC)).total_seconds()) < 60
