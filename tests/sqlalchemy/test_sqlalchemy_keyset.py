"""Keyset polling "after the last ID seen" with concurrent committers on PostgreSQL.

A row's ID is made before its INSERT and the row shows only at its commit, so rows commit out of
ID order: a reader that moved past a later ID never sees an earlier one that commits after. The
settle window of docs/how-to/fastapi.md reads only IDs made more than ``SETTLE_NS`` ago
(``id < layout.first_id_at(now - SETTLE_NS)``); every row that commits within the window of its
ID is then seen, in order.
"""

from __future__ import annotations

import random
import secrets
import threading
import time

import sqlalchemy as sa

from idfields import make_generator
from idfields.layouts import get_layout

SETTLE_NS = 10**9  # longer than any writer below holds its ID before committing
WRITERS, ROWS = 6, 40
LAYOUT = get_layout("snowflake")


def test_a_settle_window_sees_every_row_committed_out_of_id_order(pg_engine: sa.Engine) -> None:
    table = sa.Table(
        f"keyset_{secrets.token_hex(4)}",
        sa.MetaData(),
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
    )
    table.create(pg_engine)
    ids = make_generator(LAYOUT, node=3)
    committed: set[int] = set()
    cursors = {"plain": 0, "settled": 0}
    seen: dict[str, set[int]] = {"plain": set(), "settled": set()}
    passed_late = threading.Event()  # the plain reader moved past the late writer's ID
    late_id: list[int] = []
    late_waited: list[bool] = []

    def write(hold_s: float, id: int) -> None:
        with pg_engine.begin() as connection:
            connection.execute(table.insert().values(id=id))
            time.sleep(hold_s)  # the rest of the transaction: the row shows only at commit
        committed.add(id)

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(ROWS):
            write(rng.uniform(0, 0.03), ids.take(1)[0])

    def late_writer() -> None:
        late_id.append(ids.take(1)[0])
        with pg_engine.begin() as connection:
            connection.execute(table.insert().values(id=late_id[0]))
            late_waited.append(passed_late.wait(SETTLE_NS / 2e9))
        committed.add(late_id[0])

    def poll(name: str) -> None:
        query = sa.select(table.c.id).where(table.c.id > cursors[name]).order_by(table.c.id)
        if name == "settled":
            query = query.where(table.c.id < LAYOUT.first_id_at(time.time_ns() - SETTLE_NS))
        with pg_engine.connect() as connection:
            found = connection.scalars(query).all()
        if found:
            seen[name].update(found)
            cursors[name] = found[-1]
        if late_id and cursors["plain"] > late_id[0]:
            passed_late.set()

    threads = [threading.Thread(target=late_writer)]
    threads += [threading.Thread(target=writer, args=(seed,)) for seed in range(WRITERS)]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        poll("plain")
        poll("settled")
        time.sleep(0.002)
    for thread in threads:
        thread.join()
    time.sleep(SETTLE_NS / 1e9)  # the last rows settle
    poll("plain")
    poll("settled")

    assert late_waited == [True], "the plain reader read no later row before the late commit"
    assert len(committed) == WRITERS * ROWS + 1
    assert late_id[0] in committed - seen["plain"]  # the plain reader missed it for good
    assert seen["settled"] == committed  # the settled reader missed nothing
