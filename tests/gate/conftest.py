"""The sdists the gate takes its examples from: the installed versions of SQLAlchemy and
SQLModel, downloaded once by pip into ``$IDFIELDS_GATE_SDISTS`` (default: the user's cache)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path

import pytest
import shared


def _cache() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "idfields-sdists"
    return Path(os.environ.get("IDFIELDS_GATE_SDISTS", default))


def sdist_root(package: str) -> Path:
    """The extracted sdist of the installed ``package``; fetched under a lock of the cache, so
    the workers of a session (and sessions side by side) fetch it once."""
    release = version(package)
    cache = _cache()
    root = cache / f"{package}-{release}"
    with shared.exclusive(cache / f".{package}.lock"):
        if root.is_dir():
            return root
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--dest",
                str(cache),
                f"{package}=={release}",
            ],
            check=True,
        )
        (archive,) = cache.glob(f"{package}-{release}.tar.gz")
        partial = cache / f".{package}-{release}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        with tarfile.open(archive) as opened:
            opened.extractall(partial, filter="data")
        (partial / root.name).rename(root)  # whole or not at all
        partial.rmdir()
    return root


@pytest.fixture(scope="session")
def sdists() -> dict[str, Path]:
    return {name: sdist_root(name) for name in ("sqlalchemy", "sqlmodel")}
