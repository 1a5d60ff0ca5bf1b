"""Lease work never runs on the event loop of an async application using ``lease_lifespan``:
the claim and the renewals (a 1.5 s ttl: one renewal per 0.5 s) happen while coroutines insert
rows through an ``AsyncSession``, and every lease statement is seen running on another thread
(``python -m benchmarks.loop_lag`` reports the loop lag beside the plain set-up's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import databases
import pytest

from benchmarks.loop_lag import run
from idfields.sqlalchemy_ext import configure


@pytest.fixture(
    params=[
        "sqlite+aiosqlite",
        pytest.param("postgresql+asyncpg", marks=pytest.mark.postgres),
        pytest.param("postgresql+psycopg_async", marks=pytest.mark.postgres),
        pytest.param("mysql+aiomysql", marks=pytest.mark.mysql),
    ]
)
def async_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param.startswith("sqlite"):
        yield f"{request.param}:///{tmp_path / 'loop.sqlite3'}"
    else:
        fixture = "mysql_url" if request.param.startswith("mysql") else "postgres_url"
        url = databases.DbUrl.parse(request.getfixturevalue(fixture)).sqlalchemy_url()
        yield request.param + url[url.index(":") :]
    configure()


@pytest.mark.asyncio
async def test_claims_and_renewals_never_run_on_the_loop(async_url: str) -> None:
    seen = await run(async_url, lifespan=True, ttl_s=1.5, seconds=2.5)
    assert len(seen.ids) == len(set(seen.ids)) == seen.inserted
    assert seen.elsewhere.count("UPDATE") >= 3, f"renewals expected: {seen.summary()}"
    assert seen.on_loop == [], seen.summary()
