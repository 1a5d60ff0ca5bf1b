"""The sdists the gate takes its examples from: the installed versions of SQLAlchemy and
SQLModel, downloaded once by pip into ``$IDFIELDS_GATE_SDISTS`` (default: the user's cache)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path

import pytest


def _cache() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "idfields-sdists"
    return Path(os.environ.get("IDFIELDS_GATE_SDISTS", default))


def sdist_root(package: str) -> Path:
    """The extracted sdist of the installed ``package``."""
    release = version(package)
    cache = _cache()
    root = cache / f"{package}-{release}"
    if root.is_dir():
        return root
    cache.mkdir(parents=True, exist_ok=True)
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
    with tarfile.open(archive) as opened:
        opened.extractall(cache, filter="data")
    return root


@pytest.fixture(scope="session")
def sdists() -> dict[str, Path]:
    return {name: sdist_root(name) for name in ("sqlalchemy", "sqlmodel")}
