"""Golden files of the user-layout SQL renderer: what each released renderer version installs
for the sample layouts, byte for byte (``tests/pg/golden/<version>/<layout>.sql``).

A released version's files never change: a test compares the renderer with them, so a change of
the renderer that would alter what an old migration installs fails. A new renderer version adds
its own folder: ``python -m tests.pg.golden_files <version>`` writes it (and refuses to
overwrite a folder that exists).
"""

from __future__ import annotations

import sys
from pathlib import Path

from idfields.sql.layouts import render_layout_function
from tests.pg.sample_layouts import LAYOUTS

FOLDER = Path(__file__).parent / "golden"


def golden_text(layout_name: str, version: str) -> str:
    return (FOLDER / version / f"{layout_name}.sql").read_text(encoding="utf-8")


def rendered_text(layout_index: int, version: str) -> str:
    create, drop = render_layout_function(LAYOUTS[layout_index], version)
    return f"{create}\n-- drop\n{drop}"


def write(version: str) -> None:
    folder = FOLDER / version
    if folder.exists():
        raise SystemExit(f"{folder} exists: a released renderer version's files never change")
    folder.mkdir(parents=True)
    for index, layout in enumerate(LAYOUTS):
        (folder / f"{layout.name}.sql").write_text(rendered_text(index, version), "utf-8")


if __name__ == "__main__":
    write(sys.argv[1])
