"""The layout renderer against its golden files: what a migration installs for a layout
changes only with a reviewed diff of tests/pg/golden/, and a migration refuses SQL other than
the digest it recorded."""

from __future__ import annotations

import pytest

from idfields.sql.layouts import render_layout_function, sql_digest
from tests.pg.golden_files import BUILTIN, FOLDER, builtin_text, golden_text, rendered_text
from tests.pg.sample_layouts import LAYOUTS


def test_every_sample_layout_has_a_golden_file() -> None:
    assert sorted(p.stem for p in FOLDER.glob("*.sql")) == sorted(layout.name for layout in LAYOUTS)


@pytest.mark.parametrize("index", range(len(LAYOUTS)), ids=[layout.name for layout in LAYOUTS])
def test_renderer_output_equals_its_golden_file(index: int) -> None:
    assert rendered_text(index) == golden_text(LAYOUTS[index].name)


def test_builtin_functions_equal_their_golden_file() -> None:
    assert builtin_text() == BUILTIN.read_text(encoding="utf-8")


def test_a_migration_refuses_sql_other_than_it_recorded() -> None:
    from idfields.errors import LayoutError
    from idfields.migrations.alembic._functions import InstallLayoutFunctionsOp
    from idfields.migrations.django import InstallLayoutFunctions

    recorded = InstallLayoutFunctions(LAYOUTS[0]).deconstruct()[2]
    assert recorded["sha256"] == sql_digest(render_layout_function(LAYOUTS[0])[0])
    assert InstallLayoutFunctions(**recorded).create_sql  # replays as recorded
    for operation in (InstallLayoutFunctions, InstallLayoutFunctionsOp):
        with pytest.raises(LayoutError, match="not what this migration recorded"):
            operation(LAYOUTS[0].to_spec(), sha256="0" * 64)
