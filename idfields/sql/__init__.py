"""The database-side SQL, shipped as package data, one immutable file per released version.

A migration names the version it installs (``load("0001")``) and never "the current" one, so an
old migration replays the same way forever; :data:`LATEST` is only for new migrations to copy.
"""

from __future__ import annotations

import re
from importlib import resources

LATEST = "0001"

_VERSION = re.compile(r"\d{4}")


def available() -> list[str]:
    """Every released version of the functions, oldest first."""
    folder = resources.files(__package__).joinpath("functions")
    return sorted(
        entry.name.removesuffix(".sql")
        for entry in folder.iterdir()
        if _VERSION.fullmatch(entry.name.removesuffix(".sql")) and entry.name.endswith(".sql")
    )


def load(version: str) -> str:
    """The install script of ``version``: idempotent DDL (CREATE SCHEMA/OR REPLACE FUNCTION)."""
    return _read(version, "")


def load_drop(version: str) -> str:
    """The script that removes what ``load(version)`` created (refused while a default uses it)."""
    return _read(version, ".drop")


def _read(version: str, suffix: str) -> str:
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        raise ValueError(f"SQL version must be four digits such as '0001', got {version!r}")
    if version not in available():
        raise ValueError(
            f"no idfields SQL version {version!r}; released versions: {', '.join(available())}"
        )
    path = resources.files(__package__).joinpath("functions", f"{version}{suffix}.sql")
    return path.read_text(encoding="utf-8")
