"""A Django project with a wrong permutation key refuses to start, in every server the docs name.

gunicorn and uwsgi run no system checks, and at run time a wrong key fails every public ID: so
``IdFieldsConfig.ready`` refuses it, naming the fix (a list of keys for rotation). Each case is a
small project in a subprocess, on SQLite (no request reaches a database): gunicorn's worker fails
to boot and the master exits; ``manage.py test`` and ``manage.py check`` exit non-zero.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from idfields.codecs import generate_key

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent

SETTINGS = """\
import os

SECRET_KEY = "x"
USE_TZ = True
ALLOWED_HOSTS = ["127.0.0.1"]
INSTALLED_APPS = ["idfields.django_app", "shop"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
ROOT_URLCONF = "site_urls"
IDFIELDS = {"PERMUTATION_KEY": os.environ["IDFIELDS_PERMUTATION_KEY"] or None}
"""
URLS = """\
from django.http import HttpResponse
from django.urls import path

urlpatterns = [path("", lambda request: HttpResponse("up"))]
"""
MODELS = """\
from django.db import models

from idfields.django_app.public import PublicId


class Order(models.Model):
    public_id = PublicId()
"""
WSGI = "from django.core.wsgi import get_wsgi_application\n\napplication = get_wsgi_application()\n"
MANAGE = "import sys\nfrom django.core.management import execute_from_command_line\n\n"
MANAGE += "execute_from_command_line(sys.argv)\n"
ROTATION = f"{generate_key()},{generate_key()}"  # the form of IDFIELDS_PERMUTATION_KEY


@pytest.fixture
def site(tmp_path: Path) -> Path:
    for name, text in [
        ("site_settings.py", SETTINGS),
        ("site_urls.py", URLS),
        ("site_wsgi.py", WSGI),
        ("manage.py", MANAGE),
        ("shop/__init__.py", ""),
        ("shop/models.py", MODELS),
    ]:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def env(key: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "site_settings",
        "IDFIELDS_PERMUTATION_KEY": key,
        "PYTHONPATH": str(ROOT),  # this checkout's idfields
    }


def gunicorn(site: Path, key: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "gunicorn", "-w", "1", "-b", "127.0.0.1:0", "site_wsgi"]
    return subprocess.Popen(command, cwd=site, env=env(key), stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize(
    ("key", "says"),
    [
        (ROTATION, "(idfields.E009) IDFIELDS['PERMUTATION_KEY'] is one string with commas"),
        (generate_key()[:40], "(idfields.E009) IDFIELDS['PERMUTATION_KEY']: permutation key 1"),
        ("", "(idfields.E010) shop.Order show public IDs but IDFIELDS['PERMUTATION_KEY']"),
    ],
    ids=["new,old", "truncated", "unset"],
)
def test_gunicorn_refuses_to_boot_with_a_wrong_key(site: Path, key: str, says: str) -> None:
    server = gunicorn(site, key)
    try:
        _, errors = server.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.communicate()
        pytest.fail("gunicorn kept serving with a wrong permutation key")
    assert server.returncode != 0
    assert "Worker failed to boot" in errors
    assert says in errors
    if key:
        assert "list" in errors.rsplit("(idfields.E009)", 1)[1]
        assert key[:20] not in errors


def test_gunicorn_serves_with_a_good_key(site: Path) -> None:
    server = gunicorn(site, generate_key())
    try:
        assert server.stderr is not None
        seen = ""
        deadline = time.monotonic() + 60
        while (found := re.search(r"Listening at: (\S+)", seen)) is None:
            assert time.monotonic() < deadline and server.poll() is None, seen
            seen += server.stderr.readline()
        for _ in range(100):  # the worker boots after the master listens
            try:
                with urllib.request.urlopen(found.group(1) + "/", timeout=5) as answer:
                    assert answer.read() == b"up"
                break
            except OSError:
                time.sleep(0.2)
        else:
            pytest.fail(f"gunicorn did not answer: {seen}")
    finally:
        server.terminate()
        server.communicate(timeout=30)


@pytest.mark.parametrize("command", [["test"], ["check"], ["runserver", "--noreload", "0"]])
def test_manage_py_refuses_a_comma_joined_key(site: Path, command: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", *command],
        cwd=site,
        env=env(ROTATION),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "one string with commas" in done.stderr
    assert ".split(',')" in done.stderr
