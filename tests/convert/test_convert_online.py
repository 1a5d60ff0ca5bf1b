"""The online path on Postgres, end to end, with inserts running through every step."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg
from databases import DbUrl

from idfields import StaticNode, make_generator
from idfields.migrations import convert

Run = Callable[..., list[tuple[Any, ...]]]


def schema(pg: Run) -> None:
    pg("CREATE TABLE conv.item (id serial PRIMARY KEY, label text)")
    pg("CREATE TABLE conv.tag (id serial PRIMARY KEY)")
    pg(
        "CREATE TABLE conv.item_tags (id serial PRIMARY KEY, item_id integer NOT NULL "
        "REFERENCES conv.item (id) DEFERRABLE INITIALLY DEFERRED, tag_id integer NOT NULL "
        "REFERENCES conv.tag (id), UNIQUE (item_id, tag_id))"
    )
    pg("CREATE INDEX item_tags_item ON conv.item_tags (item_id)")
    pg("INSERT INTO conv.tag SELECT FROM generate_series(1, 2)")
    pg("INSERT INTO conv.item (label) SELECT 'old' FROM generate_series(1, 3000)")
    pg("INSERT INTO conv.item_tags (item_id, tag_id) SELECT id, 1 FROM conv.item")


class Writer(threading.Thread):
    """The application: inserts and updates through every step of the online path.

    Before the swap it lets the serial number rows. With ``generation="app"`` the swapped key has
    no default: from then on the application supplies IDs, as code deployed with the swap does.
    An INSERT queued behind the swap's lock runs against the swapped table, so the one
    NotNullViolation tolerated is the one raised after the swap committed; with
    ``generation="db"`` none is: the default must never be missing.
    """

    def __init__(self, url: str, generation: str) -> None:
        super().__init__()
        self.url, self.generation = url, generation
        self.stop, self.swapped, self.after_swap = (threading.Event() for _ in range(3))
        self.inserted: list[int] = []
        self.errors: list[BaseException] = []
        self.ids = make_generator("snowflake", StaticNode(4))

    def insert(self, conn: psycopg.Connection[Any]) -> int:
        if self.swapped.is_set() and self.generation == "app":
            new = self.ids()
            conn.execute("INSERT INTO conv.item (id, label) VALUES (%s, 'live')", (new,))
            self.after_swap.set()
            return new
        row = conn.execute("INSERT INTO conv.item (label) VALUES ('live') RETURNING id").fetchone()
        assert row is not None
        if self.swapped.is_set():
            self.after_swap.set()
        return int(row[0])

    def run(self) -> None:
        kwargs = DbUrl.parse(self.url).psycopg_kwargs()
        # Prepared statements would fail once after the swap ("cached plan must not change
        # result type"), as they would in any app: this writer does not prepare.
        with psycopg.connect(**kwargs, autocommit=True, prepare_threshold=None) as conn:
            while not self.stop.is_set():
                try:
                    new = self.insert(conn)
                    conn.execute(
                        "INSERT INTO conv.item_tags (item_id, tag_id) VALUES (%s, 2)", (new,)
                    )
                    conn.execute("UPDATE conv.item SET label = 'edited' WHERE id = %s", (new // 2,))
                    self.inserted.append(new)
                except psycopg.errors.NotNullViolation as exc:
                    if self.generation == "db" or not swapped(conn):
                        self.errors.append(exc)
                        return
                    self.swapped.set()  # the application learns of the swap
                except BaseException as exc:  # surfaced by the test
                    self.errors.append(exc)
                    return


def swapped(conn: psycopg.Connection[Any]) -> bool:
    """Whether the swap has committed: the key is the bigint column now."""
    row = conn.execute(
        "SELECT pg_catalog.format_type(atttypid, NULL) FROM pg_catalog.pg_attribute "
        "WHERE attrelid = 'conv.item'::regclass AND attname = 'id'"
    ).fetchone()
    return row == ("bigint",)


def run_with_writer(pg: Run, url: str, generation: str) -> tuple[convert.KeyInfo, Writer]:
    info = convert.introspect("postgresql", lambda sql, p: pg(sql, *p), "item", schema="conv")
    writer = Writer(url, generation)
    steps: list[str] = []

    def after_step(name: str) -> None:
        steps.append(name)
        if name == "swap":
            writer.swapped.set()

    writer.start()
    try:
        convert.run_online(
            lambda sql: pg(sql),
            info,
            convert.Target.of("snowflake", generation),
            batch_pages=4,
            after_step=after_step,
        )
        writer.after_swap.wait(30)  # inserts go on after the swap
    finally:
        writer.stop.set()
        writer.join()
    assert not writer.errors, writer.errors
    assert writer.after_swap.is_set()
    assert steps[0] == "prepare" and steps[-1] == "swap" and "verify" in steps
    assert steps.count("backfill") == 1
    return info, writer


def test_online_path_with_concurrent_inserts(pg: Run, postgres_url: str) -> None:
    schema(pg)
    info, writer = run_with_writer(pg, postgres_url, "app")
    inserted = writer.inserted

    types = dict(
        pg(
            "SELECT table_name || '.' || column_name, data_type FROM "
            "information_schema.columns WHERE table_schema = 'conv' "
            "AND column_name IN ('id', 'item_id')"
        )
    )
    assert types["item.id"] == types["item_tags.item_id"] == "bigint"
    ids = [row[0] for row in pg("SELECT id FROM conv.item ORDER BY id")]
    assert ids == list(range(1, 3001)) + sorted(inserted)
    assert pg("SELECT count(*) FROM conv.item_tags t JOIN conv.item i ON i.id = t.item_id") == [
        (3000 + len(inserted),)
    ]
    constraints = dict(
        pg(
            "SELECT conname, contype FROM pg_constraint WHERE conrelid IN "
            "('conv.item'::regclass, 'conv.item_tags'::regclass)"
        )
    )
    assert constraints["item_pkey"] == "p"
    assert constraints["item_tags_item_id_fkey"] == "f"
    assert constraints["item_tags_item_id_tag_id_key"] == "u"
    assert pg("SELECT count(*) FROM pg_indexes WHERE indexname = 'item_tags_item'") == [(1,)]
    assert pg(
        "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'conv.item'::regclass AND NOT tgisinternal"
    ) == [(0,)]

    new = make_generator("snowflake", StaticNode(3)).take(2)
    for value in new:
        pg("INSERT INTO conv.item (id, label) VALUES (%s, 'k-sorted')", value)
        pg("INSERT INTO conv.item_tags (item_id, tag_id) VALUES (%s, 1)", value)
    try:
        pg("INSERT INTO conv.item_tags (item_id, tag_id) VALUES (%s, 1)", max(new) + 1)
        raise AssertionError("the re-pointed foreign key let a dangling row in")
    except psycopg.errors.ForeignKeyViolation:
        pass

    pg("BEGIN")
    for statement in convert.plan(info, convert.Target.of("snowflake")).backwards:
        pg(statement.sql)
    pg("COMMIT")
    (after,) = pg("INSERT INTO conv.item (label) VALUES ('back') RETURNING id")[0]
    assert after > max(new)


def test_online_path_db_default_never_missing(
    pg: Run, postgres_url: str, id_functions: None
) -> None:
    """generation="db": the writer never supplies an ID, so a moment without a default fails."""
    schema(pg)
    _, writer = run_with_writer(pg, postgres_url, "db")
    serial = [value for value in writer.inserted if value < 2**31]
    ksorted = [value for value in writer.inserted if value >= 2**31]
    assert ksorted and writer.inserted == serial + ksorted  # numbered in insertion order
    assert ksorted == sorted(ksorted) and min(ksorted) > 3000 + len(serial)
