"""What a version of the database SQL installs is one fixed script, recorded by digest: a test
fails when it changes, and a next release's renderer cannot move it."""

from __future__ import annotations

import pytest

from idfields import sql
from idfields.sql.layouts import render_builtin_functions
from tests.next_release import next_release_renderer
from tests.sql_versions import RELEASED, builtin_section, digests, recorded, scripts

__all__ = ["next_release_renderer"]  # a fixture, imported for the tests below


@pytest.mark.parametrize("version", sql.available())
def test_each_version_installs_the_scripts_it_recorded(version: str) -> None:
    if version in RELEASED:
        fix = (
            f"SQL {version} is released, and what it installs never changes: revert the edit, "
            f"and put the change in a new version's scripts"
        )
    else:
        fix = (
            f"SQL {version} is not released yet and is edited in place: record the edit with "
            f"`python -m tests.sql_versions`"
        )
    assert recorded(version) == digests(version), fix


def test_the_latest_version_holds_the_renderers_builtin_functions() -> None:
    texts = [path.read_text(encoding="utf-8") for path in scripts(sql.VERSION)]
    sections = [builtin_section(text) for text in texts]
    assert sections == list(render_builtin_functions()), (
        f"the layout renderer changed what it writes for snowflake and traceid: before SQL "
        f"{sql.VERSION} is released, write it in with `python -m tests.sql_versions`; after, in "
        f"a new version's scripts"
    )


def test_a_next_release_renderer_leaves_the_installed_script_alone(
    request: pytest.FixtureRequest,
) -> None:
    install, drop = sql.load(sql.VERSION), sql.load_drop(sql.VERSION)
    request.getfixturevalue("next_release_renderer")
    assert render_builtin_functions()[0] not in install  # the renderer did move
    assert sql.load(sql.VERSION) == install
    assert sql.load_drop(sql.VERSION) == drop
