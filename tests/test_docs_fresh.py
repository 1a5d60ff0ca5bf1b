"""Every page's blocks as a reader pastes them into a fresh project: a clean venv holding only
what the page's ``pip install`` line names (idfields itself as the wheel of this checkout, so
nothing of the repository is on the path), a new empty directory, and only the variables the
page defines (``$DATABASE_URL``/``$SQLALCHEMY_URL``, here on SQLite). tests/test_readme.py runs
the same blocks the suite's way, on every database they name.

Sections that run on PostgreSQL or MariaDB only are left to tests/test_readme.py: they differ
from their SQLite twin by the URL alone.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest
import readme_blocks
import shared
from readme_blocks import ReadmeError, Section, environment, install_line, run_section

pytestmark = pytest.mark.slow


def _fresh_runs() -> list[object]:
    params = []
    for page in readme_blocks.pages():
        text = page.read_text(encoding="utf-8")
        for section in readme_blocks.page_sections(page):
            # The page's install line, and the section's own where it adds one.
            own = text.split(f"\n## {section.title}\n", 1)[-1].split("\n## ", 1)[0]
            extra = install_line(own) if "pip install" in own else []
            packages = tuple(dict.fromkeys(install_line(text) + extra))
            runs = section.runs
            if "sqlite" in runs or runs == [None]:
                db = "sqlite" if "sqlite" in runs else None
                slug = re.sub(r"[^a-z0-9]+", "-", f"{section.page} {section.title}".lower())
                params.append(pytest.param(section, db, packages, id=slug.strip("-")))
    return params


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of ``make dist`` (shared with tests/test_packaging.py)."""
    return shared.dist(tmp_path_factory)[1]


def _venv(packages: tuple[str, ...], wheel: Path, factory: pytest.TempPathFactory) -> Path:
    """A venv with ``packages`` installed, ``idfields`` taken from this checkout's wheel; one
    per distinct install line in the session, whichever worker asks first."""
    wanted = [re.sub(r"^(idfields|\.)(?=\[|$)", str(wheel), p) for p in packages]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    key = hashlib.sha256("\n".join(packages).encode()).hexdigest()[:12]
    made = shared.made_once(factory, f"venv-{key}", lambda where: shared.venv(where, wanted, env))
    return made / "bin" / "python"


@pytest.mark.parametrize(("section", "db", "packages"), _fresh_runs())
def test_page_section_in_a_fresh_project(
    section: Section,
    db: str | None,
    packages: tuple[str, ...],
    wheel: Path,
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
) -> None:
    python = _venv(packages, wheel, tmp_path_factory)
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}" if db else None
    env = environment(db, url, url, python=str(python), checkout=False)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the venv's modules compile once (shared.venv)
    failure = None
    try:
        run_section(section, db, tmp_path, env, python=str(python))
    except ReadmeError as error:
        failure = f"(installed: pip install {' '.join(packages)})\n{error}"
    if failure is not None:
        pytest.fail(failure, pytrace=False)
