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


def test_online_path_with_concurrent_inserts(pg: Run, postgres_url: str) -> None:
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

    stop = threading.Event()
    inserted: list[int] = []
    errors: list[BaseException] = []

    def writer() -> None:
        kwargs = DbUrl.parse(postgres_url).psycopg_kwargs()
        # Prepared statements would fail once after the swap ("cached plan must not change
        # result type"), as they would in any app: this writer does not prepare.
        with psycopg.connect(**kwargs, autocommit=True, prepare_threshold=None) as conn:
            while not stop.is_set():
                try:
                    (new,) = conn.execute(
                        "INSERT INTO conv.item (label) VALUES ('live') RETURNING id"
                    ).fetchone()  # type: ignore[misc]
                    conn.execute(
                        "INSERT INTO conv.item_tags (item_id, tag_id) VALUES (%s, 2)", (new,)
                    )
                    conn.execute("UPDATE conv.item SET label = 'edited' WHERE id = %s", (new // 2,))
                    inserted.append(new)
                except psycopg.errors.LockNotAvailable:
                    continue
                except BaseException as exc:  # surfaced below
                    errors.append(exc)
                    return

    info = convert.introspect("postgresql", lambda sql, p: pg(sql, *p), "item", schema="conv")
    thread = threading.Thread(target=writer)
    thread.start()
    steps: list[str] = []
    try:
        convert.run_online(
            lambda sql: pg(sql),
            info,
            convert.Target.of("snowflake"),
            batch_pages=4,
            after_step=steps.append,
        )
    finally:
        stop.set()
        thread.join()
    assert not errors, errors
    assert steps[0] == "prepare" and steps[-1] == "swap" and "verify" in steps
    assert len(inserted) > 0

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
