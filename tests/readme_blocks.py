"""The code blocks of README.md and of every page under docs/ as tests: every Python and shell
block runs, as written.

HOW A BLOCK RUNS
    Blocks are grouped by page and ``## section`` (blocks above a page's first ``##`` form its
    ``(top)`` section); each section runs in a temporary directory of its own, its blocks in page
    order, once per database its blocks name (``db=`` below; once with
    no database when none does). A ``python`` block runs in a fresh interpreter (cwd: that
    directory; the repository on PYTHONPATH), a ``sh``/``bash``/``shell`` block with
    ``bash -euo pipefail``. A block that exits non-zero fails the test, naming its page and line.
    Other languages (``sql``, ``text``, ``ini``...) are not run unless a directive says so.

DIRECTIVES: one HTML comment on the line(s) right above the opening fence; invisible on GitHub
    and on the docs site.
    <!-- db=all -->                 run once each on sqlite, postgresql and mysql (MariaDB)
    <!-- db=postgresql,mysql -->    the named ones only (sqlite | postgresql | mysql | all)
    <!-- not run: <reason> -->      never run; the reason is required (``make test`` is one)
    <!-- output of the block above -->
                                    this block is the expected stdout of the block before it
                                    (trailing spaces ignored; ``...`` matches any text)
    <!-- file=settings.py -->       write the block to that file (in the section's directory)
    <!-- append=settings.py -->     append it (settings fragments that build one file)
    <!-- timeout=300 -->            seconds before the block fails (default 120)
    Keys combine in one comment: ``<!-- db=all file=app.py -->``. A block without ``db=`` runs
    in every run of its section. An unknown key is an error, so a typo cannot hide a block.

WHAT A BLOCK SEES (environment)
    DATABASE_URL     the run's database: ``sqlite:///<dir>/db.sqlite3``, ``postgresql://...`` or
                     ``mysql://...`` (an empty database made for this run); unset without db=
    SQLALCHEMY_URL   the same with its driver (``postgresql+psycopg://``, ``mysql+pymysql://``)
    IDFIELDS_DB      sqlite | postgresql | mysql
    IDFIELDS_DEVELOPMENT=1 is NOT set: a block that needs a node says so, as a user must.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATABASES = ("sqlite", "postgresql", "mysql")
PYTHON = frozenset({"python", "py", "python3"})
SHELL = frozenset({"sh", "bash", "shell"})
_KEYS = frozenset({"db", "file", "append", "timeout"})
_FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")


@dataclass(frozen=True)
class Block:
    """One fenced block and the directives above it."""

    section: str
    line: int  # page line of the opening fence
    lang: str
    code: str
    dbs: tuple[str, ...] = ()
    skip: str | None = None
    output: bool = False
    file: str | None = None
    append: bool = False
    timeout: float = 120.0
    page: str = "README.md"

    @property
    def runnable(self) -> bool:
        """Run as a program (not written to a file, not compared, not skipped)."""
        return (
            self.skip is None
            and not self.output
            and self.file is None
            and self.lang in (PYTHON | SHELL)
        )

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line} ({self.section})"


@dataclass
class Section:
    """The blocks of one ``##`` section, and the databases it runs on."""

    title: str
    page: str = "README.md"
    blocks: list[Block] = field(default_factory=list)

    @property
    def runs(self) -> list[str | None]:
        named = [db for db in DATABASES if any(db in block.dbs for block in self.blocks)]
        return list(named) or [None]

    def blocks_for(self, db: str | None) -> list[Block]:
        return [block for block in self.blocks if not block.dbs or db in block.dbs]


class ReadmeError(Exception):
    """A block failed, or a page's directives are malformed."""


def parse(text: str, page: str = "README.md") -> list[Section]:
    """The sections of a page that hold at least one block to run, write or compare."""
    sections: list[Section] = []
    current = Section("(top)", page)
    comments: list[tuple[int, str]] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("## "):
            sections.append(current)
            current = Section(line[3:].strip(), page)
            comments = []
        elif line.strip().startswith("<!--"):
            start = index
            while "-->" not in lines[index]:
                index += 1
            body = " ".join(lines[start : index + 1]).strip()
            comments.append((start + 1, body[4:-3].strip()))
            index += 1
            continue
        elif (fence := _FENCE.match(line)) is not None:
            end = index + 1
            while not lines[end].startswith(fence[1]):
                end += 1
            code = "\n".join(lines[index + 1 : end]) + "\n"
            current.blocks.append(
                _block(page, current.title, index + 1, fence[2].lower(), code, comments)
            )
            comments = []
            index = end
        elif line.strip():
            comments = []  # a directive belongs to the block right below it only
        index += 1
    sections.append(current)
    return [s for s in sections if any(b.runnable or b.output or b.file for b in s.blocks)]


def _block(
    page: str, section: str, line: int, lang: str, code: str, comments: list[tuple[int, str]]
) -> Block:
    options: dict[str, object] = {}
    for where, body in comments:
        if body.startswith("not run:"):
            reason = body.removeprefix("not run:").strip()
            if not reason:
                raise ReadmeError(f"{page}:{where}: 'not run:' needs a reason")
            options["skip"] = reason
        elif body == "output of the block above":
            options["output"] = True
        else:
            options.update(_keys(f"{page}:{where}", body))
    return Block(section, line, lang, code, page=page, **options)  # type: ignore[arg-type]


def _keys(where: str, body: str) -> dict[str, object]:
    found: dict[str, object] = {}
    for token in body.split():
        key, _, value = token.partition("=")
        if key not in _KEYS or not value:
            raise ReadmeError(
                f"{where}: unknown directive {token!r}; use db=, file=, append=, "
                "timeout=, 'not run: <reason>' or 'output of the block above' (see "
                "tests/readme_blocks.py)"
            )
        if key == "db":
            names = DATABASES if value == "all" else tuple(value.split(","))
            unknown = set(names) - set(DATABASES)
            if unknown:
                raise ReadmeError(f"{where}: db={value}: unknown {sorted(unknown)}")
            found["dbs"] = names
        elif key in ("file", "append"):
            found["file"], found["append"] = value, key == "append"
        else:
            found["timeout"] = float(value)
    return found


def environment(
    db: str | None,
    url: str | None,
    sqlalchemy_url: str | None,
    python: str = sys.executable,
    checkout: bool = True,
) -> dict[str, str]:
    """What a block sees: ``python``'s directory first on PATH and, with ``checkout``, the
    repository first on PYTHONPATH (without it, only what that interpreter has installed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDFIELDS_")}
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    if checkout:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env.pop("DJANGO_SETTINGS_MODULE", None)
    if db is not None and url is not None and sqlalchemy_url is not None:
        env.update(DATABASE_URL=url, SQLALCHEMY_URL=sqlalchemy_url, IDFIELDS_DB=db)
    return env


def run_section(
    section: Section,
    db: str | None,
    workdir: Path,
    env: Mapping[str, str],
    python: str = sys.executable,
) -> None:
    """Run (write, compare) each of the section's blocks for ``db`` (Python blocks with
    ``python``); raise on the first failure."""
    last_output: str | None = None
    for block in section.blocks_for(db):
        if block.skip is not None:
            continue
        if block.file is not None:
            with (workdir / block.file).open("a" if block.append else "w") as target:
                target.write(block.code)
        elif block.output:
            _compare(block, last_output)
        elif block.runnable:
            last_output = _execute(block, workdir, env, python)


def _execute(block: Block, workdir: Path, env: Mapping[str, str], python: str) -> str:
    if block.lang in PYTHON:
        # Padded so a traceback's line numbers are the page's own.
        script = workdir / f"readme_line_{block.line}.py"
        script.write_text("\n" * block.line + block.code)
        command = [python, str(script)]
    else:
        command = ["bash", "-euo", "pipefail", "-c", block.code]
    try:
        done = subprocess.run(
            command,
            cwd=workdir,
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=block.timeout,
        )
    except subprocess.TimeoutExpired:
        raise ReadmeError(f"{block.where}: still running after {block.timeout:.0f} s") from None
    if done.returncode != 0:
        shown = shlex.join(command) if block.lang in PYTHON else block.lang
        raise ReadmeError(
            f"{block.where}: {shown} exited with {done.returncode}\n"
            f"--- stdout\n{_tail(done.stdout)}\n--- stderr\n{_tail(done.stderr)}"
        )
    return done.stdout


def _compare(block: Block, actual: str | None) -> None:
    if actual is None:
        raise ReadmeError(f"{block.where}: 'output of the block above' follows no block that ran")
    expected = _normalise(block.code)
    pattern = ".*?".join(re.escape(part) for part in expected.split("..."))
    if re.fullmatch(pattern, _normalise(actual), re.DOTALL) is None:
        raise ReadmeError(
            f"{block.where}: the block above printed\n{actual}\nbut the page shows\n{block.code}"
        )


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def pages() -> list[Path]:
    """README.md and every markdown page under docs/, so a new page is run without listing it."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def page_sections(path: Path) -> list[Section]:
    return parse(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())


def readme_sections(path: Path = ROOT / "README.md") -> list[Section]:
    return page_sections(path)


def section(page: str, title: str) -> Section:
    """The section ``title`` of ``page`` (a path from the repository root), for tests that run
    one section and then look at what it left."""
    found = [s for s in page_sections(ROOT / page) if s.title == title]
    if len(found) != 1:
        raise ReadmeError(f"{page}: {len(found)} sections titled {title!r}, expected one")
    return found[0]


def runs(sections: list[Section]) -> Iterator[tuple[Section, str | None]]:
    for section in sections:
        for db in section.runs:
            yield section, db


def install_line(text: str) -> list[str]:
    """The packages of a page's first ``pip install`` line (its comment dropped): what a reader
    installs before pasting the page's blocks; ``["idfields"]`` on a page that names none."""
    found = re.search(r"^\s*pip install ([^#`\n]+)", text, re.MULTILINE)
    if found is None:
        found = re.search(r"`pip install ([^#`\n]+)`", text)
    if found is None:
        return ["idfields"]
    return [word.strip("'\"") for word in found[1].split()]
