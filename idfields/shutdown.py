"""Give every leased node back when the process is stopped by a signal, not only at a clean exit.

``atexit`` runs at a clean exit only. Kubernetes, systemd, ``docker stop`` and process managers
stop a service with SIGTERM, and a process without a handler for it dies by the default action,
as does a server that restores the default and re-raises the signal after its own shutdown: no
``atexit``, and every lease stays live for its whole ttl, so a rolling restart holds two nodes
per process until the old leases lapse.

The first node a generator leases arms :func:`release_on_signals` (from the main thread; a
claim made in another thread arms nothing, see ``idfields.sqlalchemy_ext._lifespan``). The
handler chains, never replaces:

- where the signal had its default action, it releases every node, restores the default and
  re-raises the signal, so the process dies by it exactly as before (same exit status);
- where the application had a handler of its own, that handler runs and decides: a graceful
  shutdown keeps issuing IDs for requests in flight, so nodes are released at its end (atexit,
  an ASGI lifespan, a worker-exit hook), never while IDs may still be needed;
- an ignored signal stays ignored.

A server that installs its handler after ours and restores ours when it is done (uvicorn does,
then re-raises) reaches the first case. One that restores the default instead skips ours: such
servers get their release from a shutdown hook (the ASGI lifespan helper, gunicorn's
``worker_exit``, Celery's ``worker_process_shutdown``).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterable
from types import FrameType
from typing import Any

__all__ = ["release_nodes", "release_on_signals"]

logger = logging.getLogger("idfields.shutdown")

RELEASE_TIMEOUT_S = 5.0  # one UPDATE per node; a database that hangs longer lets them lapse
_previous: dict[int, Any] = {}  # signal -> the handler ours chains to
_lock = threading.Lock()


def release_nodes(timeout_s: float = RELEASE_TIMEOUT_S) -> None:
    """Close every generator of this process: each gives its node back, fenced at what it
    issued. Each closes on a thread of its own, so a generator whose lock the interrupted main
    thread holds (a signal arrives between any two bytecodes) cannot hang the others; what is
    not released within ``timeout_s`` lapses at its expiry."""
    from idfields.generators._base import live_generators  # the generators import this module

    threads = [
        threading.Thread(target=_close, args=(generator,), daemon=True)
        for generator in list(live_generators)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s)  # a shared deadline would be tighter; a few nodes at most


def release_on_signals(signals: Iterable[int] = (signal.SIGTERM,)) -> bool:
    """Install the chaining handler on ``signals`` (idempotent); False off the main thread,
    where Python cannot install signal handlers (nothing is installed then)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    with _lock:
        for signum in signals:
            current = signal.getsignal(signum)
            if current is _on_signal or current == signal.SIG_IGN:
                continue
            _previous[signum] = current
            signal.signal(signum, _on_signal)
    return True


def arm() -> None:
    """Called by a generator that leased a node: install the handler on SIGTERM once."""
    if signal.SIGTERM not in _previous:
        release_on_signals()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    previous = _previous.get(signum, signal.SIG_DFL)
    if callable(previous):  # the application's own handler: its shutdown, its exit
        previous(signum, frame)
        return
    release_nodes()  # SIG_DFL, or a handler set outside Python (None): the process dies now
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)


def _close(generator: Any) -> None:
    try:
        generator.close()
    except Exception:  # its lease lapses at its expiry; the others still release
        logger.warning("could not release the node of %r", generator, exc_info=True)
