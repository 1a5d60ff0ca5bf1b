"""What each SQL version installs, frozen: ``idfields/sql/functions/<version>.sha256`` records the
sha256 of its install and drop scripts (``sha256sum`` format), and the built-in snowflake and
traceid functions sit in the latest version's scripts as the layout renderer writes them.

Before a version is released it is edited in place; ``python -m tests.sql_versions`` writes the
renderer's built-in functions into the latest version's scripts and records their digests. Once
released (listed in :data:`RELEASED`), a version's scripts never change: a change goes into a new
version file, which its own migration names.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from idfields import sql
from idfields.sql.layouts import render_builtin_functions

FOLDER = Path(sql.__file__).parent / "functions"
#: Versions a release shipped: their scripts are frozen for good. Add a version when it ships.
RELEASED: frozenset[str] = frozenset()
BEGIN = "-- BEGIN built-in layouts, as idfields.sql.layouts renders them\n"
END = "-- END built-in layouts\n"


def scripts(version: str) -> list[Path]:
    return [FOLDER / f"{version}.sql", FOLDER / f"{version}.drop.sql"]


def digests(version: str) -> dict[str, str]:
    """The sha256 of each script of ``version``, by file name."""
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in scripts(version)}


def recorded(version: str) -> dict[str, str]:
    """What ``<version>.sha256`` records (empty when it is missing)."""
    path = FOLDER / f"{version}.sha256"
    if not path.is_file():
        return {}
    lines = (line.split() for line in path.read_text(encoding="utf-8").splitlines() if line)
    return {name: digest for digest, name in lines}


def builtin_section(text: str) -> str:
    """The rendered built-in functions between the markers of a script."""
    start = text.index(BEGIN) + len(BEGIN)
    return text[start : text.index(END, start)]


def with_builtins(text: str, rendered: str) -> str:
    start = text.index(BEGIN) + len(BEGIN)
    return text[:start] + rendered + text[text.index(END, start) :]


def write() -> None:
    """Edit the latest, unreleased version in place: the renderer's built-ins, then digests."""
    if sql.VERSION in RELEASED:
        raise SystemExit(
            f"idfields SQL {sql.VERSION} is released and never changes: copy its scripts to a "
            f"new version, name it in idfields.sql.VERSION and the migrations, and run this again"
        )
    for path, rendered in zip(scripts(sql.VERSION), render_builtin_functions(), strict=True):
        path.write_text(with_builtins(path.read_text(encoding="utf-8"), rendered), "utf-8")
    lines = "".join(f"{digest}  {name}\n" for name, digest in digests(sql.VERSION).items())
    (FOLDER / f"{sql.VERSION}.sha256").write_text(lines, encoding="utf-8")


if __name__ == "__main__":
    write()
