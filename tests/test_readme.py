"""Every Python and shell block of README.md and of docs/**/*.md runs as written (see
tests/readme_blocks.py).

Each ``## section`` of a page is one test per database its blocks name, in a directory of its
own and, on PostgreSQL and MariaDB, on an empty database made for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import databases
import pytest
import readme_blocks
from readme_blocks import ReadmeError, Section, environment, parse, run_section

MARKS = {"postgresql": [pytest.mark.postgres], "mysql": [pytest.mark.mysql], "sqlite": []}


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


RUNS = [
    pytest.param(
        section,
        db,
        id=f"{_slug(section.page.removesuffix('.md'))}-{_slug(section.title)}-{db or 'nodb'}",
        marks=MARKS.get(db or "sqlite", []),
    )
    for page in readme_blocks.pages()
    for section, db in readme_blocks.runs(readme_blocks.page_sections(page))
]


@pytest.mark.slow  # each section runs its blocks in processes of their own, as pasted
@pytest.mark.parametrize(("section", "db"), RUNS)
def test_readme_section(
    section: Section, db: str | None, tmp_path: Path, fresh_database: Callable[[str], str]
) -> None:
    url = sqlalchemy_url = None
    if db == "sqlite":
        url = sqlalchemy_url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    elif db is not None:
        url = fresh_database(db)
        sqlalchemy_url = databases.DbUrl.parse(url).sqlalchemy_url()
    failure = None
    try:
        run_section(section, db, tmp_path, environment(db, url, sqlalchemy_url))
    except ReadmeError as error:
        failure = str(error)
    if failure is not None:
        pytest.fail(failure, pytrace=False)


SAMPLE = """\
# title

## One

<!-- db=sqlite,postgresql file=app.py -->
```python
VALUE = 41
```

<!-- db=sqlite,postgresql -->
```python
import app; print(app.VALUE + 1)
```
<!-- output of the block above -->
```text
4...
```

## Two

```sh
echo two
```

<!-- not run: needs the network -->
```sh
pip install idfields
```

```sql
SELECT 1;
```
"""


def test_parser_reads_the_directives(tmp_path: Path) -> None:
    one, two = parse(SAMPLE)
    assert one.title == "One" and one.runs == ["sqlite", "postgresql"]
    written, program, output = one.blocks
    assert written.file == "app.py" and not written.runnable and written.line == 6
    assert program.runnable and program.dbs == ("sqlite", "postgresql")
    assert output.output and not output.runnable
    assert two.runs == [None]
    assert [b.skip for b in two.blocks] == [None, "needs the network", None]
    assert [b.runnable for b in two.blocks] == [True, False, False]  # sql is not run
    run_section(one, "sqlite", tmp_path, environment(None, None, None))
    run_section(two, None, tmp_path, environment(None, None, None))


def test_failures_name_the_readme_line(tmp_path: Path) -> None:
    (section,) = parse("## S\n\n```python\nraise SystemExit('boom')\n```\n")
    with pytest.raises(ReadmeError, match=r"(?s)README.md:3 \(S\).*boom"):
        run_section(section, None, tmp_path, environment(None, None, None))
    traceback = parse("## S\n\n```python\n\n1 / 0\n```\n")[0]
    with pytest.raises(ReadmeError, match=r'readme_line_3.py", line 5'):
        run_section(traceback, None, tmp_path, environment(None, None, None))
    wrong = parse("## S\n\n```sh\necho 1\n```\n<!-- output of the block above -->\n```\n2\n```\n")
    with pytest.raises(ReadmeError, match="printed\n1\n"):
        run_section(wrong[0], None, tmp_path, environment(None, None, None))


@pytest.mark.parametrize(
    ("markdown", "message"),
    [
        ("## S\n<!-- db=oracle -->\n```python\n```\n", "unknown \\['oracle'\\]"),
        ("## S\n<!-- dbs=all -->\n```python\n```\n", "unknown directive 'dbs=all'"),
        ("## S\n<!-- not run: -->\n```python\n```\n", "needs a reason"),
    ],
)
def test_malformed_directives_are_errors(markdown: str, message: str) -> None:
    with pytest.raises(ReadmeError, match=message):
        parse(markdown)


def test_install_table_lists_every_extra_of_pyproject() -> None:
    """One fact in one place: the install page's extras table is the pyproject's extras, and
    every ``idfields[...]`` in the README and the docs names extras that exist."""
    import tomllib

    root = readme_blocks.ROOT
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    install = (root / "docs" / "how-to" / "install.md").read_text()
    table = install.split("## Extras", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([\w-]+)` \|", table, re.MULTILINE)
    assert listed == list(extras)
    text = "".join(page.read_text() for page in readme_blocks.pages())
    named = {e for group in re.findall(r"idfields\[([\w,-]+)\]", text) for e in group.split(",")}
    assert named and named <= set(extras), named - set(extras)


def test_every_docs_page_is_run(tmp_path: Path) -> None:
    """A page added under docs/ is picked up without being listed, and names its own lines."""
    pages = readme_blocks.pages()
    assert pages[0].name == "README.md"
    assert {p.relative_to(readme_blocks.ROOT).as_posix() for p in pages} >= {
        "docs/index.md",
        "docs/how-to/install.md",
    }
    (section,) = parse("# T\n\n```python\nraise SystemExit('boom')\n```\n", "docs/how-to/x.md")
    assert section.title == "(top)" and section.page == "docs/how-to/x.md"
    with pytest.raises(ReadmeError, match=r"docs/how-to/x.md:3 \(\(top\)\)"):
        run_section(section, None, tmp_path, environment(None, None, None))


def test_make_demo_installs_the_demo_extra_only(tmp_path: Path) -> None:
    """``make demo`` installs the demo extra, not the whole dev toolchain (445 MB)."""
    import subprocess
    import tomllib

    root = readme_blocks.ROOT
    done = subprocess.run(
        ["make", "-n", "-B", "demo", f"VENV={tmp_path / 'venv'}"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "pip install -e '.[demo]'" in done.stdout and "[dev" not in done.stdout
    assert "idfields compare --out compare-out" in done.stdout
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert extras["demo"] == ["idfields[compare]"]
