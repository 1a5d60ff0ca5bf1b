"""Golden files of the layout SQL renderer: what it installs for the sample layouts, byte for
byte (``tests/pg/golden/<layout>.sql``), and what it writes into the functions' SQL for the
built-in snowflake and traceid (``tests/pg/golden/builtin/functions.sql``).

A test compares the renderer with them, so a change of the renderer shows as a diff to review:
``python -m tests.pg.golden_files`` writes them again.
"""

from __future__ import annotations

from pathlib import Path

from idfields.sql.layouts import render_builtin_functions, render_layout_function
from tests.pg.sample_layouts import LAYOUTS

FOLDER = Path(__file__).parent / "golden"
BUILTIN = FOLDER / "builtin" / "functions.sql"


def golden_text(layout_name: str) -> str:
    return (FOLDER / f"{layout_name}.sql").read_text(encoding="utf-8")


def rendered_text(layout_index: int) -> str:
    create, drop = render_layout_function(LAYOUTS[layout_index])
    return f"{create}\n-- drop\n{drop}"


def builtin_text() -> str:
    create, drop = render_builtin_functions()
    return f"{create}\n-- drop\n{drop}"


def write() -> None:
    for index, layout in enumerate(LAYOUTS):
        (FOLDER / f"{layout.name}.sql").write_text(rendered_text(index), "utf-8")
    BUILTIN.parent.mkdir(exist_ok=True)
    BUILTIN.write_text(builtin_text(), "utf-8")


if __name__ == "__main__":
    write()
