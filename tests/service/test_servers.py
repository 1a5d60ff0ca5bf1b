"""Real servers stopped as a process manager stops them (SIGTERM) give their nodes back: uvicorn
(one process, ``--workers 2``, and a bare ASGI app wrapped in ``ReleaseNodesAtShutdown``),
gunicorn's sync workers and its uvicorn worker, and a Celery worker, on each backend, serving
IDs from ``service_app``."""

from __future__ import annotations

import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
import sqlalchemy as sa
from service_support import HERE, environment, live_leases

ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "postgresql": "postgresql+asyncpg",
    "mysql": "mysql+aiomysql",
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def get(port: int, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
                return str(response.read().decode())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.fixture
def app_url(sa_url: str) -> str:
    """The application's own URL, on an async driver."""
    backend = sa.make_url(sa_url).get_backend_name()
    return ASYNC_DRIVERS[backend] + sa_url[sa_url.index(":") :]


@pytest.fixture
def layout() -> str:
    return f"svc_{secrets.token_hex(4)}"


def serve(
    command: list[str], url: str, layout: str, *, extra: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    env = {**environment(), "IDFIELDS_APP_URL": url, "IDFIELDS_APP_LAYOUT": layout, **(extra or {})}
    return subprocess.Popen(
        [sys.executable, "-m", *command],
        cwd=HERE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


SERVERS = {
    "uvicorn": ["uvicorn", "service_app:app", "--port", "{port}"],
    "uvicorn-bare-asgi": ["uvicorn", "service_app:asgi", "--port", "{port}"],
    "uvicorn-workers": ["uvicorn", "service_app:app", "--port", "{port}", "--workers", "2"],
    "gunicorn-sync": ["gunicorn", "-w", "2", "-b", "127.0.0.1:{port}", "service_app:wsgi"],
    "gunicorn-uvicorn": [
        "gunicorn", "-w", "2", "-k", "uvicorn.workers.UvicornWorker",
        "-b", "127.0.0.1:{port}", "service_app:app",
    ],
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_server_stopped_by_sigterm_leaves_no_live_lease(
    server: str, app_url: str, layout: str
) -> None:
    port = free_port()
    command = [part.format(port=port) for part in SERVERS[server]]
    process = serve(command, app_url, layout)
    try:
        served = {get(port) for _ in range(8)}
        assert live_leases(app_url, layout=layout), f"no lease while serving {served}"
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    left = live_leases(app_url, layout=layout)
    assert not left, f"{server} left {len(left)} live lease(s) after SIGTERM:\n{output}"


@pytest.mark.slow
def test_a_celery_worker_stopped_by_sigterm_leaves_no_live_lease(
    app_url: str, layout: str, redis_url: str
) -> None:
    from celery import Celery

    queue = f"idfields_{layout}"
    worker = ["celery", "-A", "celery_app", "worker", "-c", "2", "-Q", queue, "--pool", "prefork"]
    process = serve(worker, app_url, layout, extra={"IDFIELDS_CELERY_URL": redis_url})
    client = Celery(broker=redis_url, backend=redis_url)
    try:
        results = [client.send_task("celery_app.new_id", queue=queue) for _ in range(8)]
        served = {result.get(timeout=60) for result in results}
        assert live_leases(app_url, layout=layout), f"no lease while serving {served}"
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
        client.close()
    left = live_leases(app_url, layout=layout)
    assert not left, f"celery left {len(left)} live lease(s) after SIGTERM:\n{output}"
