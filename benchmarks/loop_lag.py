"""Event-loop stalls from node-lease work in an async application.

``python -m benchmarks.loop_lag ASYNC_URL [--ttl 0.3] [--seconds 3]`` inserts rows through an
``AsyncSession`` while a probe coroutine sleeps 1 ms at a time and records how late it wakes,
with a short lease ttl so renewals are frequent. It runs twice: leases configured the plain way
(``LeaseSource(SQLAlchemyDatabase(engine))``: the claim and every renewal run inside the ID call,
on the loop) and with ``lease_lifespan`` (claim in a worker thread, renewals on a thread of
their own). For each it reports the lease statements run on the loop's thread and the loop lag.
The suite asserts the thread rule (tests/service/test_event_loop.py); lags are machine-bound.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from idfields.coordination import LeaseSource
from idfields.sqlalchemy_ext import (
    SQLAlchemyDatabase,
    configure,
    id_column,
    id_default,
    lease_lifespan,
)

_LEASE_STATEMENTS = ("SELECT", "INSERT", "UPDATE")


class Base(DeclarativeBase):
    pass


class Event(Base):
    __tablename__ = "idfields_loop_lag_event"
    id: Mapped[int] = id_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(20))


@dataclass
class LoopLag:
    """What one run saw: lease statements by thread, the probe's lags, the IDs written."""

    loop_thread: int = field(default_factory=threading.get_ident)
    on_loop: list[str] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)
    lags_s: list[float] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)
    inserted: int = 0

    def statement(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        kind = statement.split()[0]
        if "idfields_node_lease" in statement and kind in _LEASE_STATEMENTS:
            on_loop = threading.get_ident() == self.loop_thread
            (self.on_loop if on_loop else self.elsewhere).append(kind)

    def summary(self) -> str:
        lags = sorted(self.lags_s)
        p99 = lags[int(len(lags) * 0.99)] if lags else 0.0
        return (
            f"{len(self.on_loop)} lease statements on the loop, {len(self.elsewhere)} elsewhere; "
            f"loop lag max {max(lags, default=0) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
            f"median {statistics.median(lags or [0]) * 1000:.2f} ms ({len(lags)} probes)"
        )


@contextlib.asynccontextmanager
async def plain_leases(engine: AsyncEngine, ttl_s: float) -> AsyncIterator[None]:
    """The leases as ``configure()`` alone sets them up: every lease step inside an ID call."""
    database = SQLAlchemyDatabase(engine)
    configure(source=LeaseSource(database, ttl_s=ttl_s))
    try:
        yield
    finally:
        configure()
        database.dispose()


async def run(
    url: str, *, lifespan: bool, ttl_s: float = 0.3, seconds: float = 1.5, rows: bool = True
) -> LoopLag:
    """Insert rows for ``seconds`` with leases set up one way or the other; see the module doc.
    ``rows=False`` only makes the IDs (as the column default would), so the loop's lag is the
    lease work's alone rather than the inserts' too."""
    seen = LoopLag()
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)  # with the lease tables
        await conn.execute(sa.delete(Event))
    event.listen(sa.Engine, "before_cursor_execute", seen.statement)
    stop = asyncio.Event()
    probe = asyncio.create_task(_probe(stop, seen.lags_s))
    new_id = id_default()
    leases: Callable[[AsyncEngine, float], Any] = (
        (lambda engine, ttl: lease_lifespan(engine, ttl_s=ttl)) if lifespan else plain_leases
    )
    try:
        async with leases(engine, ttl_s):
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                if rows:
                    async with AsyncSession(engine) as session, session.begin():
                        session.add_all(Event(name=f"e{seen.inserted + i}") for i in range(20))
                    seen.inserted += 20
                else:
                    for _ in range(20):
                        new_id()
                    seen.inserted += 20
                    await asyncio.sleep(0)
    finally:
        stop.set()
        await probe
        event.remove(sa.Engine, "before_cursor_execute", seen.statement)
        async with engine.begin() as conn:
            if rows:
                seen.ids = list(await conn.scalars(sa.select(Event.id)))
            await conn.run_sync(lambda sync: Event.__table__.drop(sync))
        await engine.dispose()
    return seen


async def _probe(stop: asyncio.Event, lags: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(0.001)
        lags.append(time.perf_counter() - started - 0.001)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="async SQLAlchemy URL (postgresql+asyncpg://, ...)")
    parser.add_argument("--ttl", type=float, default=0.3, help="lease ttl in seconds")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    for rows in (False, True):
        for lifespan in (False, True):
            seen = asyncio.run(
                run(args.url, lifespan=lifespan, ttl_s=args.ttl, seconds=args.seconds, rows=rows)
            )
            how = "lease_lifespan" if lifespan else "configure() alone"
            work = f"{seen.inserted:,} {'rows' if rows else 'IDs'}"
            print(f"{how:18}: {work}; {seen.summary()}")


if __name__ == "__main__":
    main()
