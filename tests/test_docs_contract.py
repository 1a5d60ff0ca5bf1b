"""What a first-day reader relies on, kept true by the suite: every page says what its blocks
need installed and which variables they read, every system check the package raises is explained
in the Django reference, both tables of contents (README.md's and docs/index.md's) reach every
page, the How-to guides open with the install, and the version is written in one place."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from readme_blocks import ROOT, page_sections, pages

import idfields

_CHECK_ID = re.compile(r"""["'](idfields\.[EWI]\d{3})["']""")


def _section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_every_system_check_id_is_in_the_reference() -> None:
    raised = {
        m for path in (ROOT / "idfields").rglob("*.py") for m in _CHECK_ID.findall(path.read_text())
    }
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


#: What each extra of ``pip install 'idfields[...]'`` brings, by the module a block imports.
_EXTRA_MODULES = {
    "django": {"django"},
    "rest": {"django", "rest_framework"},
    "sqlalchemy": {"sqlalchemy", "alembic"},
    "asyncpg": {"sqlalchemy", "asyncpg"},
    "postgres": {"psycopg"},
    "mysql": {"pymysql"},
    "redis": {"redis"},
    "pydantic": {"pydantic"},
    "otel": {"opentelemetry"},
    "compare": {"rich", "matplotlib"},
}
#: Modules a user installs; the standard library and idfields itself need no line.
_THIRD_PARTY = set().union(*_EXTRA_MODULES.values()) | {
    "fastapi", "httpx", "pytest_django", "pytest", "uvicorn", "gunicorn", "celery", "sqlmodel",
    "aiosqlite", "aiomysql",
}  # fmt: skip
_IMPORT = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", re.MULTILINE)
_COMMANDS = {  # a shell command, and the module whose install brings it
    r"\bdjango-admin\b|manage\.py": "django",
    r"^\s*alembic ": "alembic",
    r"\bTestClient\b": "httpx",  # Starlette's TestClient runs on httpx, which FastAPI omits
    r"^\s*(?:python -m )?pytest\b": "pytest",
}


def _needed(code: str) -> set[str]:
    found = {module for module in _IMPORT.findall(code) if module in _THIRD_PARTY}
    found |= {module for pattern, module in _COMMANDS.items() if re.search(pattern, code, re.M)}
    return found | ({"sqlalchemy"} if "sqlmodel" in found else set())


def _installed(text: str) -> set[str]:
    """The modules the page's ``pip install`` lines bring (its extras, ``[x,y]`` alternatives
    in a line's comment included)."""
    have: set[str] = set()
    for line in re.findall(r"pip install ([^`\n]+)", text):
        for extras in re.findall(r"\[([\w,-]+)\]", line):
            have |= set().union(*(_EXTRA_MODULES.get(e, set()) for e in extras.split(",")))
        have |= {word.strip("'\"").replace("-", "_") for word in line.split() if "[" not in word}
    return have | ({"pytest"} if "pytest_django" in have else set())


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_page_says_what_its_blocks_need(page: Path) -> None:
    """A reader pasting a page's blocks into a fresh project finds on that page what to install
    (and, from a checkout, how) and every variable the blocks read."""
    text = page.read_text()
    blocks = [b for s in page_sections(page) for b in s.blocks if b.runnable or b.file]
    code = "".join(block.code for block in blocks)
    missing = _needed(code) - _installed(text)
    assert missing == set(), f"{page.name}: no pip install line brings {sorted(missing)}"
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    unsaid = {v for v in re.findall(r"\b(SQLALCHEMY_URL|DATABASE_URL)\b", code) if v not in prose}
    assert unsaid == set(), f"{page.name}: the blocks read {sorted(unsaid)}, which no line defines"
    if "pip install 'idfields" in text and page.name != "install.md":
        assert "install.md" in text, f"{page.name}: link install.md for installing from a checkout"
