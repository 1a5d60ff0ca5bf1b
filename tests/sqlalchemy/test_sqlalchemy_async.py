"""AsyncSession and AsyncConnection get their IDs before the INSERT (asyncpg, psycopg async)."""

from __future__ import annotations

import databases
import pytest
import sqlalchemy as sa
from sa_models import Base, Item
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine


@pytest.mark.asyncio
@pytest.mark.parametrize("driver", ["asyncpg", "psycopg_async"])
async def test_async_session_and_connection(postgres_url: str, driver: str) -> None:
    url = databases.DbUrl.parse(postgres_url).sqlalchemy_url().replace("+psycopg", f"+{driver}")
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(Base.metadata.drop_all)
            await conn.run_sync(Base.metadata.create_all)
        async with AsyncSession(engine) as session:
            added = [Item(name=f"a{i}") for i in range(3)]
            session.add_all(added)
            await session.flush()
            assert [item.id for item in added] == sorted({item.id for item in added})
            await session.execute(sa.insert(Item), [{"name": f"b{i:03d}"} for i in range(300)])
            await session.commit()
        async with engine.begin() as conn:
            await conn.execute(Item.__table__.insert(), [{"name": "c"}, {"name": "c"}])
            ids = list(await conn.scalars(sa.select(Item.id).order_by(Item.name)))
        assert len(set(ids)) == 305
        assert ids[3:303] == sorted(ids[3:303])
        assert min(ids[3:]) > max(ids[:3])
    finally:
        async with engine.begin() as conn:
            await conn.run_sync(Base.metadata.drop_all)
        await engine.dispose()
