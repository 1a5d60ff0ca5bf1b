"""What the pytest-xdist workers of one session make once and share: the release files of
``make dist``, the venvs of the fresh-project runs. Each worker runs its session fixtures on its
own, and the scheduler may hand any test to any worker (``xdist_group`` does not group under
pytest 9.2: pytest-xdist#1386), so the first worker to ask makes the thing under a file lock in
the session's shared temporary folder and the others wait for it."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def exclusive(lock: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file ``lock`` (made if missing) against other processes."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def made_once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder ``name`` that ``make`` filled, once in this session whichever worker asks
    first; a ``make`` that raised is tried again by the next to ask."""
    base = factory.getbasetemp()
    shared = base.parent if "PYTEST_XDIST_WORKER" in os.environ else base
    folder = shared / f"once-{name}"
    with exclusive(shared / f"once-{name}.lock"):
        if not (folder / ".made").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / ".made").touch()
    return folder


def dist(factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist and the wheel ``make dist`` builds from this checkout (the wheel from the
    sdist, with the compiled core where a C compiler is present), built once per session."""

    def build(out: Path) -> None:
        done = subprocess.run(
            ["make", "dist", f"DIST={out / 'dist'}", f"PYTHON={sys.executable}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    out = made_once(factory, "dist", build) / "dist"
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


def venv(where: Path, packages: Sequence[str], env: dict[str, str] | None = None) -> Path:
    """A new venv at ``where`` holding ``packages`` and what they require, and no pip: this
    interpreter's pip installs into it (``pip --python``), which spares each venv its own
    copy of pip. Nothing is compiled at install (most of a package is never imported): run
    its programs without ``PYTHONDONTWRITEBYTECODE``, so each module compiles once, when a
    program first imports it. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile"]
    subprocess.run(
        [*pip, *packages],
        check=True,
        env=env,
        timeout=900,
    )
    return python
