"""``manage.py runserver`` stopped by SIGTERM leaves no live node lease (PostgreSQL
coordination, real processes).

With its autoreloader, runserver is two processes: the parent watches, a child serves, and the
child is where the first ID leases a node. SIGTERM to the parent (what a process manager
sends) makes Django's parent exit and kill the child with SIGKILL, which no handler sees.
Without the reloader the one process serves in threads, so no handler was armed by a lease
taken there."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]

SETTINGS = """\
import os
from urllib.parse import urlsplit

url = urlsplit(os.environ["PROJECT_DATABASE_URL"])
SECRET_KEY = "runserver-sigterm"
DEBUG = True
ALLOWED_HOSTS = ["*"]
USE_TZ = True
ROOT_URLCONF = "project_urls"
INSTALLED_APPS = ["idfields.django_app"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": url.path[1:],
        "HOST": url.hostname,
        "PORT": url.port or 5432,
        "USER": url.username or "",
        "PASSWORD": url.password or "",
    }
}
IDFIELDS = {"NODE_SOURCE": "lease", "LEASE_TTL": 60}
"""

URLS = """\
from django.http import HttpResponse
from django.urls import path

from idfields.django_app.sources import generator_for


def new_id(request):
    return HttpResponse(str(generator_for("snowflake")()))


urlpatterns = [path("id", new_id)]
"""


def live_holders(url: str) -> list[str]:
    now_ms = time.time_ns() // 1_000_000
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT holder FROM idfields_node_lease WHERE holder <> '' AND expires_at_ms >= %s",
            [now_ms],
        ).fetchall()
    return [str(holder) for (holder,) in rows]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(url: str, deadline_s: float = 30) -> str:
    """The body of ``url``, retried while the server starts."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return str(response.read().decode())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.parametrize("reload", [True, False], ids=["autoreloader", "noreload"])
def test_runserver_gives_its_node_back_on_sigterm(
    tmp_path: Path, fresh_database: Callable[[str], str], reload: bool
) -> None:
    url = fresh_database("postgresql")
    (tmp_path / "project_settings.py").write_text(SETTINGS)
    (tmp_path / "project_urls.py").write_text(URLS)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("IDFIELDS_", "DJANGO_"))},
        "PROJECT_DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "project_settings",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
    }
    django = [sys.executable, "-m", "django"]
    done = subprocess.run(
        [*django, "migrate", "-v", "0"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    port = free_port()
    server = subprocess.Popen(
        [*django, "runserver", f"127.0.0.1:{port}", *([] if reload else ["--noreload"])],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert int(get(f"http://127.0.0.1:{port}/id")) > 2**40
        assert len(live_holders(url)) == 1, "the serving process leased a node"
        server.send_signal(signal.SIGTERM)
        _, errors = server.communicate(timeout=30)
        deadline = time.monotonic() + 5
        while live_holders(url) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert live_holders(url) == [], f"live 5 s after SIGTERM (ttl 60 s):\n{errors[-2000:]}"
        with psycopg.connect(url, autocommit=True) as conn:
            [(fence_ms,)] = conn.execute("SELECT expires_at_ms FROM idfields_node_lease").fetchall()
        ahead_s = (fence_ms - time.time_ns() // 1_000_000) / 1000
        # Released by the server itself: fenced at what it issued. Freed by the reloader's
        # parent for its SIGKILLed child: fenced at the child's expiry, as a reclaim would be.
        assert (50 < ahead_s <= 60) if reload else (ahead_s < 1), ahead_s
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
