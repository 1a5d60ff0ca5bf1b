"""Convert, restore AUTO_INCREMENT, convert again: the table then holds the layout's own IDs.

The max(id) check keeps a day of clock slack for a table's first conversion; IDs that decode as
this layout's, issued before now, are below every ID it issues from now on, so a second
conversion right after a downgrade goes through. A refusal names what the IDs are and the fix.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import alembic_env
import pytest
import sqlalchemy as sa
from alembic import command
from databases import DbUrl

from idfields.errors import LayoutError
from idfields.layouts import Constant, Layout, Node, Sequence, Timestamp
from idfields.migrations import convert

SNOWFLAKE = convert.Target.of("snowflake")
CREATE = {
    "postgresql": [
        "CREATE TABLE customers (id serial PRIMARY KEY, name text)",
        "CREATE TABLE orders (id serial PRIMARY KEY, customer_id integer REFERENCES customers)",
    ],
    "mysql": [
        "CREATE TABLE customers (id int AUTO_INCREMENT PRIMARY KEY, name varchar(50))",
        "CREATE TABLE orders (id int AUTO_INCREMENT PRIMARY KEY, customer_id int, "
        "FOREIGN KEY (customer_id) REFERENCES customers (id))",
    ],
}


def own_id(ago_s: float = 1.0) -> int:
    """A snowflake ID as a generator issued it ``ago_s`` seconds ago."""
    layout = SNOWFLAKE.layout
    return layout.compose(
        timestamp=layout.tick_of(time.time_ns() - int(ago_s * 1e9)), node=7, sequence=3
    )


@pytest.mark.parametrize("backend", ["postgresql", "mysql"])
def test_convert_downgrade_convert_again(
    backend: str, fresh_database: Callable[[str], str], tmp_path: Path
) -> None:
    url = DbUrl.parse(fresh_database(backend)).sqlalchemy_url()
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for sql in CREATE[backend]:
                conn.exec_driver_sql(sql)
            conn.exec_driver_sql("INSERT INTO customers (name) VALUES ('ada')")
        config = alembic_env.stock_project(tmp_path, url, "None")
        alembic_env.write_revision(
            config,
            "0001",
            None,
            'op.convert_to_ksorted_id("customers")',
            'op.restore_auto_increment("customers")',
        )
        command.upgrade(config, "head")
        issued = own_id()
        with engine.begin() as conn:
            conn.execute(
                sa.text("INSERT INTO customers (id, name) VALUES (:id, 'grace')"), {"id": issued}
            )
            conn.execute(sa.text("INSERT INTO orders (customer_id) VALUES (:id)"), {"id": issued})
        command.downgrade(config, "base")
        with engine.begin() as conn:  # the restored counter goes on above the k-sorted IDs
            conn.exec_driver_sql("INSERT INTO customers (name) VALUES ('edsger')")
        command.upgrade(config, "head")
        with engine.connect() as conn:
            highest = conn.exec_driver_sql("SELECT max(id) FROM customers").scalar_one()
        assert (
            issued
            < highest
            < SNOWFLAKE.layout.compose(
                timestamp=SNOWFLAKE.layout.tick_of(time.time_ns()), node=0, sequence=0
            )
        )
        command.downgrade(config, "base")
    finally:
        engine.dispose()


def key(max_id: int) -> convert.KeyInfo:
    return convert.KeyInfo(
        "postgresql", None, "customers", sequence="customers_id_seq", max_id=max_id
    )


def test_own_ids_pass_and_others_are_refused_with_their_fix() -> None:
    SNOWFLAKE.check_max_id(key(own_id(ago_s=3600)))  # an hour old: inside the clock slack
    ahead = own_id(ago_s=-3600)  # issued by a host whose clock runs an hour ahead
    with pytest.raises(
        LayoutError, match=r"from 20\d\d-.*after this host's clock.*correct that clock"
    ):
        SNOWFLAKE.check_max_id(key(ahead))
    with pytest.raises(LayoutError, match=r"not 'tailed' IDs.*Choose a layout"):
        tailed = Layout("tailed", [Timestamp(41), Node(10), Sequence(9), Constant(3, value=1)])
        recent = tailed.compose(timestamp=tailed.tick_of(time.time_ns()) - 1000, node=1, sequence=0)
        convert.Target.of(tailed).check_max_id(key(recent - 1))  # its version field reads 0
