"""The user-layout renderer against its golden files: a released version renders exactly what
it rendered when released, so an old migration installs the same functions forever."""

from __future__ import annotations

import pytest

from idfields.sql.layouts import VERSIONS, render_layout_function, sql_digest
from tests.pg.golden_files import FOLDER, golden_text, rendered_text
from tests.pg.sample_layouts import LAYOUTS


def test_every_renderer_version_has_golden_files() -> None:
    assert sorted(p.name for p in FOLDER.iterdir() if p.is_dir()) == sorted(VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("index", range(len(LAYOUTS)), ids=[layout.name for layout in LAYOUTS])
def test_renderer_output_equals_its_golden_file(version: str, index: int) -> None:
    assert rendered_text(index, version) == golden_text(LAYOUTS[index].name, version)


def test_a_migration_refuses_sql_other_than_it_recorded() -> None:
    from idfields.errors import LayoutError
    from idfields.migrations.alembic.functions import InstallLayoutFunctionsOp
    from idfields.migrations.django import InstallLayoutFunctions

    recorded = InstallLayoutFunctions(LAYOUTS[0], "0002").deconstruct()[2]
    assert recorded["sha256"] == sql_digest(render_layout_function(LAYOUTS[0], "0002")[0])
    assert InstallLayoutFunctions(**recorded).create_sql  # replays as recorded
    for operation in (InstallLayoutFunctions, InstallLayoutFunctionsOp):
        with pytest.raises(LayoutError, match="not what this migration recorded"):
            operation(LAYOUTS[0].to_spec(), "0002", sha256="0" * 64)
