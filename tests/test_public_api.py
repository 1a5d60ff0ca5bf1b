"""The public API is what the documentation shows: every ``idfields`` name that the README or a
page under ``docs/`` names imports from where it says.

Collected from each Python block's syntax tree (``from idfields... import name``,
``import idfields...``, dotted references such as ``idfields.metrics.otel.instrument`` and
strings that are a dotted path, ``DEFAULT_AUTO_FIELD = "idfields.django_app.fields...."``), and
from the inline code of the prose: its ``from idfields... import`` statements and its calls
(``idfields.migrations.django.ConvertToKSortedId(...)``). Other inline dotted names may be
metric names (``idfields.nodes.free``), and a call whose first part is no Python name of the
package is a database function (``idfields.next_snowflake()``), left to the SQL tests. A page
added under ``docs/`` is picked up without touching this test.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest
from readme_blocks import PYTHON, ROOT, parse

import idfields

_DOTTED = re.compile(r"idfields(\.\w+)+")
_CALL = re.compile(r"(idfields(?:\.\w+)+)\(")
_INLINE = re.compile(r"`([^`]+)`")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_FROM_IMPORT = re.compile(r"from (idfields[\w.]*) import ([\w, ]+)$")


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


def _dotted(node: ast.expr) -> str | None:
    """``idfields.a.b`` for an attribute chain rooted at the name ``idfields``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "idfields" and parts:
        return ".".join(["idfields", *reversed(parts)])
    return None


def names_in(code: str) -> set[str]:
    """The dotted idfields names one Python block imports or spells out."""
    found: set[str] = set()
    inner: set[int] = set()  # the attribute chains inside a longer one (ast.walk: outer first)
    for node in ast.walk(ast.parse(code)):
        if id(node) in inner:
            if isinstance(node, ast.Attribute):
                inner.add(id(node.value))
            continue
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "idfields":
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "idfields")
        elif isinstance(node, ast.Attribute) and (dotted := _dotted(node)):
            found.add(dotted)
            inner.add(id(node.value))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _DOTTED.fullmatch(node.value)
        ):
            found.add(node.value)
    return found


def names_in_prose(line: str) -> set[str]:
    """The idfields names of one prose line's inline code (Python names only, not SQL)."""
    found: set[str] = set()
    for span in _INLINE.findall(line):
        statement = _FROM_IMPORT.match(span)
        if statement:
            module, imported = statement.groups()
            found.update(f"{module}.{name.strip()}" for name in imported.split(","))
            continue
        for match in _CALL.finditer(span):
            dotted = match.group(1)
            if hasattr(idfields, dotted.split(".")[1]) or _is_module(dotted.split(".")[:2]):
                found.add(dotted)
    return found


def _is_module(parts: list[str]) -> bool:
    return importlib.util.find_spec(".".join(parts)) is not None


def documented_names() -> list[tuple[str, str]]:
    """(name, where: page and line) for every name the docs show, first mention first."""
    names: dict[str, str] = {}
    for page in _pages():
        text = page.read_text()
        for section in parse(text):
            for block in section.blocks:
                if block.lang in PYTHON:
                    where = f"{page.relative_to(ROOT)}:{block.line}"
                    for name in names_in(block.code):
                        names.setdefault(name, where)
        fenced = False
        for number, line in enumerate(text.splitlines(), 1):
            if _FENCE.match(line):
                fenced = not fenced
            elif not fenced:
                for name in names_in_prose(line):
                    names.setdefault(name, f"{page.relative_to(ROOT)}:{number}")
    return sorted(names.items())


def resolve(dotted: str) -> object:
    """Import ``dotted`` as a module, or as an attribute of the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as error:
            if error.name is None or not ".".join(parts[:cut]).startswith(error.name):
                raise
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ModuleNotFoundError(dotted)


def test_the_docs_name_some_public_names() -> None:
    assert len(documented_names()) > 20


@pytest.mark.parametrize(("name", "where"), documented_names())
def test_every_documented_name_imports_from_where_the_docs_say(name: str, where: str) -> None:
    try:
        resolve(name)
    except (ImportError, AttributeError) as error:
        pytest.fail(f"{where} names {name}, which does not import: {error}")


def test_names_are_taken_from_imports_references_and_dotted_strings() -> None:
    code = (
        "import idfields.metrics.otel\n"
        "from idfields.layouts import Layout, Node\n"
        "idfields.metrics.otel.instrument()\n"
        'DEFAULT_AUTO_FIELD = "idfields.django_app.fields.SnowflakeAutoField"\n'
        'sql = "SELECT idfields.next_snowflake()"\n'
    )
    assert names_in_prose(
        "Use `from idfields.migrations.alembic import op` or "
        "`idfields.migrations.django.ConvertToKSortedId(...)`, not `idfields.next_snowflake()`."
    ) == {"idfields.migrations.alembic.op", "idfields.migrations.django.ConvertToKSortedId"}
    assert names_in(code) == {
        "idfields.metrics.otel",
        "idfields.layouts.Layout",
        "idfields.layouts.Node",
        "idfields.metrics.otel.instrument",
        "idfields.django_app.fields.SnowflakeAutoField",
    }
