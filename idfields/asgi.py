"""An ASGI wrapper that gives the process's nodes back at the server's shutdown.

uvicorn installs its SIGTERM handler before it loads the application, and after a graceful
stop restores the default action and raises the signal again: ``atexit`` never runs, and
idfields' own handler (installed at the first lease, after uvicorn's) is not the one restored.
What does run is the ASGI lifespan's shutdown. Applications with a lifespan of their own call
:func:`idfields.shutdown.release_nodes` there (SQLAlchemy: ``lease_lifespan``); one without,
such as Django's ASGI application, is wrapped::

    application = ReleaseNodesAtShutdown(get_asgi_application())

The wrapper answers the lifespan messages itself when the application does not speak the
protocol, and otherwise passes them through, releasing after the application's shutdown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from idfields.shutdown import release_nodes

__all__ = ["ReleaseNodesAtShutdown"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class ReleaseNodesAtShutdown:
    """Wraps an ASGI application; see the module docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        spoke = False  # whether the application took part in the protocol at all

        async def receiving() -> Message:
            nonlocal spoke
            spoke = True
            return await receive()

        async def sending(message: Message) -> None:
            nonlocal spoke
            spoke = True
            if message["type"] == "lifespan.shutdown.complete":
                await asyncio.to_thread(release_nodes)
            await send(message)

        try:
            await self.app(scope, receiving, sending)
        except Exception:
            if spoke:  # the application failed inside the protocol: its error to report
                raise
            await _own_lifespan(receive, send)  # it does not speak lifespan (Django)


async def _own_lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await asyncio.to_thread(release_nodes)
            await send({"type": "lifespan.shutdown.complete"})
            return
