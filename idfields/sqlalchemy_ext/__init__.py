"""SQLAlchemy integration: k-sorted BIGINT keys assigned before the INSERT, and the shared tables.

::

    class Order(Base):
        __tablename__ = "orders"
        id: Mapped[int] = id_column(primary_key=True)

    configure(source=LeaseSource(SQLAlchemyDatabase(engine)))  # at start-up, before the first ID

Without :func:`configure` the node comes from ``IDFIELDS_NODE_ID`` (or development mode). The
lease tables join the metadata of the first table holding an ID column; :func:`check_metadata`
names foreign keys too narrow for the IDs. :func:`public_id_property` shows rows by their public
ID string instead of their key.
"""

from idfields.sqlalchemy_ext._checks import check_metadata
from idfields.sqlalchemy_ext._columns import id_column, id_column_core
from idfields.sqlalchemy_ext._coordination import SQLAlchemyDatabase
from idfields.sqlalchemy_ext._created import created_from_id, creation_time
from idfields.sqlalchemy_ext._lifespan import lease_lifespan
from idfields.sqlalchemy_ext._public import public_id_property, public_ids
from idfields.sqlalchemy_ext._registry import configure, get_generator, id_default
from idfields.sqlalchemy_ext._tables import (
    add_tables,
    counter_table,
    launch_table,
    metadata,
    node_lease_table,
)

__all__ = [
    "SQLAlchemyDatabase",
    "add_tables",
    "check_metadata",
    "configure",
    "counter_table",
    "created_from_id",
    "creation_time",
    "get_generator",
    "id_column",
    "id_column_core",
    "id_default",
    "launch_table",
    "lease_lifespan",
    "metadata",
    "node_lease_table",
    "public_id_property",
    "public_ids",
]
