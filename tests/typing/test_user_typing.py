"""A user's strict mypy run over a project built on idfields is clean.

``userproject/`` is that project: a Django app (models with our fields and ``PublicId``, the
admin mixins and columns) checked with django-stubs' plugin, and SQLAlchemy 2 models (``Mapped``
columns, ``public_id_property``) with pydantic models sending public IDs, checked with
SQLAlchemy's own typing. Every function there returns what it declares, so an ``Any`` leaking
from idfields fails ``warn_return_any`` (part of ``--strict``), as a wrong signature does.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = Path(__file__).resolve().parent / "userproject"
pytestmark = pytest.mark.slow


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "IDFIELDS_"))}
    return {**env, "PYTHONPATH": f"{PROJECT}{os.pathsep}{ROOT}", **extra}


def test_strict_mypy_with_django_stubs_and_sqlalchemy_is_clean(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path), "."],
        cwd=PROJECT,
        # The editable install's import hook is invisible to mypy: point it at the source tree.
        env=_env(MYPYPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found in 5 source files" in done.stdout


def test_the_project_runs() -> None:
    """The checked project is a working one: Django starts with it, the models import."""
    script = (
        "import django; django.setup()\n"
        "import shop.admin, tables\n"
        "from shop.models import Order\n"
        "print(type(Order._meta.pk).__name__, tables.PostOut.model_json_schema()['properties']"
        "['id']['pattern'][:2])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PROJECT,
        env=_env(DJANGO_SETTINGS_MODULE="settings", IDFIELDS_PERMUTATION_KEY=secrets.token_hex(32)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["SnowflakeAutoField", "^["]
