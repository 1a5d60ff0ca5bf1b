"""Every Python and shell block of the pages under ``docs/`` runs as written, with the README's
directives and harness (``tests/readme_blocks.py``): one test per ``## section`` and database."""

from __future__ import annotations

from pathlib import Path

import pytest
import readme_blocks
from readme_blocks import ReadmeError, Section, environment, run_section

PAGES = sorted((readme_blocks.ROOT / "docs").rglob("*.md"))
RUNS = [
    pytest.param(section, id=f"{page.stem}-{section.title}")
    for page in PAGES
    for section, db in readme_blocks.runs(readme_blocks.readme_sections(page))
    if db is None
]


@pytest.mark.parametrize("section", RUNS)
def test_docs_section(section: Section, tmp_path: Path) -> None:
    failure = None
    try:
        run_section(section, None, tmp_path, environment(None, None, None))
    except ReadmeError as error:
        failure = str(error)
    if failure is not None:
        pytest.fail(failure, pytrace=False)
