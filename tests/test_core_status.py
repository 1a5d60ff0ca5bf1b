"""Which hot path runs, and why, is visible: ``idfields --version`` says it, and Django's check
framework says so (``idfields.I001``) when the slower pure-Python core runs."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from needs import NEEDS

ROOT = Path(__file__).resolve().parent.parent
CHECK = """
import django
from django.conf import settings
settings.configure(INSTALLED_APPS=["idfields.django_app"], DATABASES={})
django.setup()
from django.core import checks
for message in checks.run_checks():
    print(message.id, message.msg)
"""


def run(*args: str, pure: bool) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDFIELDS_")}
    env["PYTHONPATH"] = str(ROOT)
    env["IDFIELDS_DEVELOPMENT"] = "1"
    if pure:
        env["IDFIELDS_PURE_PYTHON"] = "1"
    done = subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_version_names_the_pure_core_and_why() -> None:
    shown = run("-m", "idfields", "--version", pure=True).strip()
    assert shown.startswith("idfields ") and "\n" not in shown
    assert "(pure-Python core: IDFIELDS_PURE_PYTHON is set in the environment)" in shown


@pytest.mark.skipif(
    importlib.util.find_spec("idfields._speedups") is None, reason=NEEDS["compiled core"]
)
def test_version_names_the_compiled_core() -> None:
    assert "(compiled core: " in run("-m", "idfields", "--version", pure=False)


def test_django_check_says_when_the_pure_core_runs() -> None:
    lines = run("-c", CHECK, pure=True).splitlines()
    assert any(line.startswith("idfields.I001 pure-Python core: ") for line in lines), lines
    if importlib.util.find_spec("idfields._speedups") is not None:
        assert "idfields.I001" not in run("-c", CHECK, pure=False)


NO_WIPE_ON_FORK = """
import mmap

class KernelBefore414(mmap.mmap):
    def madvise(self, *args):
        raise OSError(22, "Invalid argument")

mmap.mmap = KernelBefore414
from idfields import make_generator
from idfields.generators._hotpath import COMPILED, compiled, core_status
generator = make_generator("snowflake", node=1)
print(COMPILED, generator() < generator(), compiled("SlotDefault") is not None, core_status())
"""


def test_a_kernel_that_wipes_no_page_on_fork_gets_the_pure_core_and_says_why() -> None:
    """The compiled core sees forks only through that page; without it, the pure core compares
    pids (the compiled SQLAlchemy default, which holds no counters, stays when built)."""
    shown = run("-c", NO_WIPE_ON_FORK, pure=False).strip()
    built = importlib.util.find_spec("idfields._speedups") is not None
    assert shown.startswith(f"False True {built} pure-Python core: this kernel wipes no page")
