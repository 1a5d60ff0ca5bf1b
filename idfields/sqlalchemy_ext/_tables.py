"""The launch log, node lease and counter tables, as SQLAlchemy ``Table`` objects.

The schema is shared with the Django app and the PL/pgSQL functions, column for column, so a
project running both ORMs on one database shares its leases. An ``id_column`` adds them to its
own table's ``MetaData`` (so ``create_all()`` creates them and Alembic autogenerate writes them
into the first revision, never an ``op.drop_table``); :func:`add_tables` does the same for a
``MetaData`` without ID columns, and :data:`metadata` holds them alone.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Identity,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
)

from idfields.sqlalchemy_ext._checks import INFO_KEY, warn_narrow_columns, watch

__all__ = [
    "INFO_KEY",
    "add_tables",
    "counter_table",
    "launch_table",
    "metadata",
    "node_lease_table",
]

LAUNCH_TABLE = "idfields_launch"
NODE_LEASE_TABLE = "idfields_node_lease"
COUNTER_TABLE = "idfields_counter"
TABLES = (LAUNCH_TABLE, NODE_LEASE_TABLE, COUNTER_TABLE)


def add_tables(metadata: MetaData) -> tuple[Table, Table, Table]:
    """Define the three tables on ``metadata`` (once); returns (launch, node_lease, counter).

    Also warns about the columns :func:`~idfields.sqlalchemy_ext.check_metadata` names: now,
    before ``metadata.create_all()`` and when the ORM configures its mappers.
    """
    tables = define_tables(metadata)
    warn_narrow_columns(metadata)
    return tables


def define_tables(metadata: MetaData) -> tuple[Table, Table, Table]:
    """:func:`add_tables` without checking now: an ID column calls it while its own table, and
    the tables its module defines after it, are not complete."""
    watch(metadata)
    if LAUNCH_TABLE in metadata.tables:
        tables = metadata.tables
        return tables[LAUNCH_TABLE], tables[NODE_LEASE_TABLE], tables[COUNTER_TABLE]
    launch = Table(
        LAUNCH_TABLE,
        metadata,
        # Assigned max(id)+1 by the coordination, never by the database: no autoincrement.
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("label", String(100), nullable=False),
        Column("created_at", DateTime(timezone=True), nullable=False),
    )
    node_lease = Table(
        NODE_LEASE_TABLE,
        metadata,
        # Django's BigAutoField: identity on Postgres, AUTO_INCREMENT on MariaDB, and on SQLite
        # "integer ... AUTOINCREMENT" (only INTEGER PRIMARY KEY is a rowid alias there).
        Column(
            "id",
            BigInteger().with_variant(Integer(), "sqlite"),
            Identity(),
            primary_key=True,
        ),
        Column("layout", String(64), nullable=False),
        Column("node", Integer, nullable=False),
        Column("holder", String(255), nullable=False),
        Column("acquired_at_ms", BigInteger, nullable=False),
        Column("expires_at_ms", BigInteger, nullable=False),
        UniqueConstraint("layout", "node", name="idfields_node_lease_layout_node_uniq"),
        sqlite_autoincrement=True,
    )
    counter = Table(
        COUNTER_TABLE,
        metadata,
        Column("name", String(100), primary_key=True),
        Column("value", BigInteger, nullable=False),
    )
    return launch, node_lease, counter


metadata = MetaData()
launch_table, node_lease_table, counter_table = define_tables(metadata)
