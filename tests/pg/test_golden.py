"""The layout renderer against its golden files: what a migration installs for a layout
changes only with a reviewed diff of tests/pg/golden/; a migration stores the SQL it installs,
or refuses, when it runs, SQL other than the digest it recorded."""

from __future__ import annotations

import pytest

from idfields.sql.layouts import render_layout_function, sql_digest
from tests.pg.golden_files import FOLDER, golden_text, rendered_text
from tests.pg.sample_layouts import LAYOUTS


def test_every_sample_layout_has_a_golden_file() -> None:
    assert sorted(p.stem for p in FOLDER.glob("*.sql")) == sorted(layout.name for layout in LAYOUTS)


@pytest.mark.parametrize("index", range(len(LAYOUTS)), ids=[layout.name for layout in LAYOUTS])
def test_renderer_output_equals_its_golden_file(index: int) -> None:
    assert rendered_text(index) == golden_text(LAYOUTS[index].name)


def test_a_migration_stores_its_sql_and_refuses_another_rendering_when_it_runs() -> None:
    from idfields.errors import LayoutError
    from idfields.migrations.alembic._functions import InstallLayoutFunctionsOp
    from idfields.migrations.django import InstallLayoutFunctions

    create, drop = render_layout_function(LAYOUTS[0])
    recorded = InstallLayoutFunctions(LAYOUTS[0]).deconstruct()[2]
    assert (recorded["create_sql"], recorded["drop_sql"]) == (create, drop)
    assert InstallLayoutFunctions(**recorded).forwards_sql() == create  # replays as recorded
    assert InstallLayoutFunctions(LAYOUTS[0], sha256=sql_digest(create)).forwards_sql() == create
    for operation in (InstallLayoutFunctions, InstallLayoutFunctionsOp):
        built = operation(LAYOUTS[0].to_spec(), sha256="0" * 64)  # loads: nothing rendered yet
        with pytest.raises(LayoutError, match="not what this migration recorded") as caught:
            built.forwards_sql() if isinstance(built, InstallLayoutFunctions) else built.scripts()
        assert "create_sql=" in str(caught.value) and "remove sha256=" in str(caught.value)
