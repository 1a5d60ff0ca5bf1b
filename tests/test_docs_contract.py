"""What a first-day reader relies on, kept true by the suite: every system check the package
raises is explained in the Django reference, both tables of contents (README.md's and
docs/index.md's) reach every page, the How-to guides open with the install, and the version is
written in one place."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import yaml
from readme_blocks import ROOT

import idfields

_CHECK_ID = re.compile(r"""id=["'](idfields\.[EWI]\d{3})["']""")


def _section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_every_system_check_id_is_in_the_reference() -> None:
    raised = {m for path in (ROOT / "idfields").rglob("*.py") for m in _CHECK_ID.findall(path.read_text())}
    table = _section((ROOT / "docs" / "reference" / "django.md").read_text(), "System checks")
    documented = set(re.findall(r"^\| `(idfields\.[EWI]\d{3})` \|", table, re.MULTILINE))
    assert len(raised) > 20, raised
    assert raised - documented == set(), "raised but not in the System checks table"
    assert documented - raised == set(), "in the table but raised nowhere"


def _linked(text: str, base: Path) -> set[str]:
    links = re.findall(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)", text)
    return {(base / link).resolve().relative_to(ROOT / "docs").as_posix() for link in links}


def test_both_tables_of_contents_reach_every_page() -> None:
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    readme = _section((ROOT / "README.md").read_text(), "Documentation")
    index = _section((ROOT / "docs" / "index.md").read_text(), "Where to start")
    assert pages - {"index.md"} - _linked(readme, ROOT) == set(), "missing from README.md"
    assert pages - {"index.md"} - _linked(index, ROOT / "docs") == set(), "missing from index.md"


def test_how_to_guides_open_with_the_install() -> None:
    nav = yaml.safe_load((ROOT / "docs" / "how-to" / ".nav.yml").read_text())["nav"]
    assert nav[0] == "install.md" and nav[-1]["glob"] == "*", nav


def test_the_version_is_written_once() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert idfields.__version__ == importlib.metadata.version("idfields")
