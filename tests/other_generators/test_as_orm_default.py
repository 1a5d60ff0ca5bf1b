"""The Redis client and the host-shared generator serve as a column default as they are: a
zero-argument callable, evaluated per row, through SQLAlchemy's executemany on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa
from databases import DbUrl
from othergen_support import RedisServer

from idfields.generators import IdSource
from idfields.hostshared import HostSharedGenerator
from idfields.redisid import RedisIdClient, configure_shard


def _insert_with(source: IdSource, url: str, table: str) -> list[int]:
    metadata = sa.MetaData()
    rows = sa.Table(
        table,
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False, default=source),
        sa.Column("n", sa.Integer, nullable=False),
    )
    engine = sa.create_engine(DbUrl.parse(url).sqlalchemy_url())
    try:
        with engine.begin() as connection:
            metadata.create_all(connection)
            connection.execute(rows.insert(), [{"n": n} for n in range(2000)])
            ids = connection.execute(sa.select(rows.c.id).order_by(rows.c.n)).scalars().all()
            metadata.drop_all(connection)
    finally:
        engine.dispose()
    return list(ids)


def test_redis_ids_as_a_column_default(
    own_postgres_url: str, redis_servers: Callable[[int], list[RedisServer]]
) -> None:
    (server,) = redis_servers(1)
    configure_shard(server.client(), 8)
    client = RedisIdClient([server.url])
    ids = _insert_with(client, own_postgres_url, "redis_ids")
    assert len(set(ids)) == 2000 and ids == sorted(ids)
    assert client.layout.decode(ids[0]).values["node"] == 8


def test_host_shared_ids_as_a_column_default(own_postgres_url: str, tmp_path: Path) -> None:
    generator = HostSharedGenerator("chronicle", node=12, path=tmp_path / "state")
    ids = _insert_with(generator, own_postgres_url, "host_ids")
    assert len(set(ids)) == 2000 and ids == sorted(ids)
    assert {i % 100 for i in ids} == {12}
