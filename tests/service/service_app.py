"""The applications the server tests run in real servers, configured by the environment:
``IDFIELDS_APP_URL`` (a SQLAlchemy URL, async or sync) and ``IDFIELDS_APP_LAYOUT`` (a layout
name of the test's own, so its lease rows are its alone).

- ``service_app:app``: a FastAPI app with ``lease_lifespan`` (uvicorn, gunicorn's uvicorn worker);
- ``service_app:wsgi``: a WSGI app leasing at its first request (gunicorn's sync workers);
- ``service_app:asgi``: a bare ASGI app that, like Django's, refuses the lifespan protocol and
  leases at its first request, wrapped in ``ReleaseNodesAtShutdown`` (uvicorn).

Both answer every request with ``pid node id`` of the process that served it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import sqlalchemy as sa
from fastapi import FastAPI
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import create_async_engine

from idfields.asgi import ReleaseNodesAtShutdown
from idfields.coordination import LeaseSource
from idfields.layouts import Layout, Node, Sequence, Timestamp
from idfields.layouts._builtin import SNOWFLAKE_EPOCH
from idfields.pydantic import Id
from idfields.sqlalchemy_ext import (
    SQLAlchemyDatabase,
    configure,
    get_generator,
    lease_lifespan,
)
from idfields.sqlalchemy_ext._coordination import sync_url

URL = os.environ["IDFIELDS_APP_URL"]
LAYOUT = Layout(
    os.environ["IDFIELDS_APP_LAYOUT"],
    [Timestamp(41, unit="ms", epoch=SNOWFLAKE_EPOCH), Node(10), Sequence(12)],
)


def served() -> str:
    generator = get_generator(LAYOUT)
    new_id = generator()
    return f"{os.getpid()} {generator.node['node']} {new_id}"  # type: ignore[attr-defined]


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    engine = create_async_engine(URL) if sa.make_url(URL).get_dialect().is_async else None
    async with lease_lifespan(engine or sa.create_engine(URL), claim=[LAYOUT], layouts=[LAYOUT]):
        yield
    if engine is not None:
        await engine.dispose()


class Served(BaseModel):
    text: str
    id: Id


app = FastAPI(lifespan=lifespan)


@app.get("/")
async def root() -> Served:
    text = served()
    return Served(text=text, id=int(text.split()[2]))


def configured_here() -> None:
    """Lease in this process at its first request (gunicorn's workers are forked)."""
    if not _configured:
        engine = sa.create_engine(sync_url(URL))
        configure(source=LeaseSource(SQLAlchemyDatabase(engine)), layouts=[LAYOUT])
        _configured.append(True)


_configured: list[bool] = []


def wsgi(environ: dict[str, object], start_response: Callable[..., object]) -> Iterable[bytes]:
    configured_here()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [served().encode()]


async def bare_asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        raise ValueError(f"this application handles HTTP only, not {scope['type']}")
    configured_here()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": served().encode()})


asgi = ReleaseNodesAtShutdown(bare_asgi)
