"""The launch log, node lease and counter tables, as SQLAlchemy ``Table`` objects.

The schema is shared with the Django app and the PL/pgSQL functions, column for column, so a
project running both ORMs on one database shares its leases. Include :data:`metadata` in your
Alembic ``target_metadata`` (or call :func:`add_tables` on your own ``MetaData``) so autogenerate
knows the tables; create them with ``op.create_idfields_tables()``.
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

LAUNCH_TABLE = "idfields_launch"
NODE_LEASE_TABLE = "idfields_node_lease"
COUNTER_TABLE = "idfields_counter"


def add_tables(metadata: MetaData) -> tuple[Table, Table, Table]:
    """Define the three tables on ``metadata``; returns (launch, node_lease, counter)."""
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
launch_table, node_lease_table, counter_table = add_tables(metadata)
