"""docs/how-to/fastapi.md runs as written, like the README's blocks (tests/readme_blocks.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import databases
import pytest
from readme_blocks import ROOT, ReadmeError, environment, parse, run_section, runs

PAGE = ROOT / "docs" / "how-to" / "fastapi.md"


@pytest.mark.slow
@pytest.mark.postgres
def test_the_fastapi_how_to_runs(tmp_path: Path, fresh_database: Callable[[str], str]) -> None:
    url = fresh_database("postgresql")
    env = environment("postgresql", url, databases.DbUrl.parse(url).sqlalchemy_url())
    try:
        for section, db in runs(parse(PAGE.read_text(encoding="utf-8"))):
            if db is not None:
                run_section(section, db, tmp_path, env)
    except ReadmeError as error:
        pytest.fail(f"{PAGE.name}: {error}", pytrace=False)
