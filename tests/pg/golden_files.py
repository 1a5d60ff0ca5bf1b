"""Golden files of the layout SQL renderer: what it installs for the sample layouts, byte for
byte (``tests/pg/golden/<layout>.sql``). What it writes for the built-in snowflake and traceid
sits in the SQL version's own scripts (``tests/sql_versions.py``).

A test compares the renderer with them, so a change of the renderer shows as a diff to review:
``python -m tests.pg.golden_files`` writes them again.
"""

from __future__ import annotations

from pathlib import Path

from idfields.sql.layouts import render_layout_function
from tests.pg.sample_layouts import LAYOUTS

FOLDER = Path(__file__).parent / "golden"


def golden_text(layout_name: str) -> str:
    return (FOLDER / f"{layout_name}.sql").read_text(encoding="utf-8")


def rendered_text(layout_index: int) -> str:
    create, drop = render_layout_function(LAYOUTS[layout_index])
    return f"{create}\n-- drop\n{drop}"


def write() -> None:
    for index, layout in enumerate(LAYOUTS):
        (FOLDER / f"{layout.name}.sql").write_text(rendered_text(index), "utf-8")


if __name__ == "__main__":
    write()
