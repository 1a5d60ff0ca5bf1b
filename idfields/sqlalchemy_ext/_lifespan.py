"""The node leases of an async application for its lifetime, kept off the event loop.

::

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with lease_lifespan(engine):
            yield

At startup the leases are configured on ``engine``'s database (an ``AsyncEngine`` or an
``Engine``) and the nodes of ``claim`` are leased in a worker thread; from then on each lease
renews on a thread of its own (``BackgroundRenewal``), so no ID made on the event loop waits
for the database. At shutdown, which uvicorn and other ASGI servers run on SIGTERM before they
exit (uvicorn then re-raises the signal, skipping ``atexit``), every node is given back.

A layout not in ``claim`` leases its node at its first ID, on the loop: name every layout the
application uses. A lease lost to another process (renewals failing for longer than its ttl)
is claimed again the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

from sqlalchemy import Engine
from sqlalchemy.ext.asyncio import AsyncEngine

from idfields import shutdown
from idfields.coordination import LeaseSource
from idfields.coordination._background import BackgroundRenewal
from idfields.layouts import Layout
from idfields.sqlalchemy_ext._coordination import SQLAlchemyDatabase
from idfields.sqlalchemy_ext._registry import configure, get_generator


@asynccontextmanager
async def lease_lifespan(
    engine: AsyncEngine | Engine,
    *,
    claim: Iterable[str | Layout] = ("snowflake",),
    ttl_s: float = 60.0,
    layouts: Iterable[Layout] = (),
    schema: str | None = None,
) -> AsyncIterator[None]:
    """Lease the nodes of ``claim`` now and give them back at the end; see the module doc.

    ``layouts`` are the application's user layouts, as :func:`configure` takes them;
    ``schema`` holds the idfields tables, as :class:`SQLAlchemyDatabase` takes it.
    """
    database = SQLAlchemyDatabase(engine, schema=schema)
    source = BackgroundRenewal(LeaseSource(database, ttl_s=ttl_s))
    await asyncio.to_thread(configure, source=source, layouts=list(layouts))
    shutdown.release_on_signals()  # chained before the server's own handler
    try:
        for layout in claim:
            await asyncio.to_thread(get_generator(layout))  # the claim; one ID of plenty unused
        yield
    finally:
        await asyncio.to_thread(_release, database)


def _release(database: SQLAlchemyDatabase) -> None:
    shutdown.release_nodes()
    database.dispose()
