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
import builtins
import importlib
import importlib.util
import re
from pathlib import Path

import pytest
from readme_blocks import PYTHON, ROOT

import idfields
import idfields.errors

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
        fence: tuple[int, str, list[str]] | None = None  # opening line, language, code
        for number, line in enumerate(page.read_text().splitlines(), 1):
            where = f"{page.relative_to(ROOT)}:{number}"
            if fence is None and _FENCE.match(line):
                fence = (number, line.strip().lstrip("`~").split(" ")[0].lower(), [])
            elif fence is not None and _FENCE.match(line):
                if fence[1] in PYTHON:  # every block, run or not, shows what imports
                    for name in names_in("\n".join(fence[2])):
                        names.setdefault(name, f"{page.relative_to(ROOT)}:{fence[0]}")
                fence = None
            elif fence is not None:
                fence[2].append(line)
            else:
                for name in names_in_prose(line):
                    names.setdefault(name, where)
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


# --- The declared API: each public module's ``__all__`` is what the docs show -----------------

PACKAGE = ROOT / "idfields"
_DIRECTIVE = re.compile(r"^::: (idfields[\w.]*)\s*$")
_MEMBER = re.compile(r"^\s+- (\w+)\s*$")

# Modules a framework finds by their path, whose names no caller imports.
PROTOCOL_MODULES = {
    "idfields.__main__": "run by `python -m idfields`",
    "idfields.sqlalchemy_ext.__main__": "run by `python -m idfields.sqlalchemy_ext`",
    "idfields.django_app.management": "Django finds `management/commands/<name>.py` by path",
    "idfields.django_app.migrations": "Django finds the app's migrations by path",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def public_modules() -> dict[str, Path]:
    """Every module whose dotted path has no ``_``-led part, but those a framework finds."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        if any(part.startswith("_") for part in name.split(".")):
            continue
        if not any(name == m or name.startswith(f"{m}.") for m in PROTOCOL_MODULES):
            found[name] = path
    return found


def declared(path: Path) -> list[str] | None:
    """A module's literal ``__all__``, or None when it declares none."""
    for node in ast.parse(path.read_text()).body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "__all__":
            assert isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
            value = ast.literal_eval(node.value)
            assert isinstance(value, list), f"{path}: __all__ is a literal list"
            return value
    return None


def directives() -> dict[str, set[str] | None]:
    """The mkdocstrings directives of the docs: path -> its ``members:`` (None: all of them)."""
    found: dict[str, set[str] | None] = {}
    for page in _pages():
        lines = page.read_text().splitlines()
        for number, line in enumerate(lines):
            match = _DIRECTIVE.match(line)
            if not match:
                continue
            members = {
                m.group(1)
                for following in lines[number + 1 :]
                if following.strip() and following.startswith(" ")
                for m in [_MEMBER.match(following)]
                if m
            }
            found[match.group(1)] = members or None
    return found


def documented_api() -> dict[str, set[str]]:
    """Module -> the names of it the docs show: imported, spelled out or rendered."""
    modules = public_modules()
    api: dict[str, set[str]] = {}

    def add(dotted: str) -> None:
        module, _, name = dotted.rpartition(".")
        while module and module not in modules and f"{module}.{name}" not in modules:
            module, _, name = module.rpartition(".")  # a class's attribute: its class
        if f"{module}.{name}" in modules:
            api.setdefault(f"{module}.{name}", set())  # the module itself is named
        elif module:
            api.setdefault(module, set()).add(name)

    for dotted, _ in documented_names():
        add(dotted)
    for dotted, members in directives().items():
        if dotted in modules:
            api.setdefault(dotted, set()).update(
                members if members is not None else declared(modules[dotted]) or ()
            )
        else:
            add(dotted)
    return api


def test_every_public_module_declares_its_api() -> None:
    missing = [name for name, path in public_modules().items() if declared(path) is None]
    assert not missing, (
        f"these modules declare no __all__ (add one, [] if nothing is API): {missing}"
    )


@pytest.mark.parametrize("module", sorted(public_modules()))
def test_all_equals_what_the_docs_show(module: str) -> None:
    names = set(declared(public_modules()[module]) or ())
    shown = documented_api().get(module, set())
    assert names == shown, (
        f"{module}.__all__ and the docs differ: undocumented {sorted(names - shown)}, "
        f"documented but not in __all__ {sorted(shown - names)}"
    )


def test_documented_names_live_in_public_modules() -> None:
    private = [m for m in documented_api() if m not in public_modules()]
    assert not private, f"the docs show names of private modules: {private}"


# --- Errors: one hierarchy in idfields/errors.py --------------------------------------------------

_BUILTIN_ERRORS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}
# Exceptions that never leave the module that raises them (caught there): control flow.
PRIVATE_SIGNALS = {
    "idfields.coordination._leases._FencedAhead": "rolls a claim back, caught inside"
}


def error_classes() -> dict[str, ast.ClassDef]:
    """Every exception class defined under idfields/ (a class whose bases lead to one), by path."""
    classes = {
        f"{module_name(path)}.{node.name}": node
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
    }
    known = set(_BUILTIN_ERRORS)
    errors: dict[str, ast.ClassDef] = {}
    while True:
        found = {
            dotted: node
            for dotted, node in classes.items()
            if any(
                (getattr(b, "id", None) or getattr(b, "attr", None)) in known for b in node.bases
            )
        }
        if found.keys() == errors.keys():
            return errors
        errors = found
        known |= {node.name for node in found.values()}


def test_every_error_class_lives_in_errors_py() -> None:
    elsewhere = [
        dotted
        for dotted in error_classes()
        if not dotted.startswith("idfields.errors.") and dotted not in PRIVATE_SIGNALS
    ]
    assert not elsewhere, (
        f"define these in idfields/errors.py (re-export where needed): {elsewhere}"
    )


@pytest.mark.parametrize("name", idfields.errors.__all__)
def test_every_error_is_an_idfields_error(name: str) -> None:
    declared_class = getattr(idfields.errors, name)
    warning = issubclass(declared_class, Warning)
    base = idfields.errors.IdFieldsWarning if warning else idfields.errors.IdFieldsError
    assert issubclass(declared_class, base)


_BARE = {"ValueError", "TypeError", "RuntimeError", "KeyError", "LookupError", "IndexError"}
# A raise of a bare builtin that a protocol asks for, by module and function: the reason.
PROTOCOL_RAISES = {
    ("idfields.layouts._layout", "__getitem__"): "`layout[name]` is a mapping: KeyError",
}


def bare_raises() -> list[tuple[str, str, int, str]]:
    """(module, function, line, builtin) of every ``raise`` of a bare builtin error."""
    found: list[tuple[str, str, int, str]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                raised = node.exc if isinstance(node, ast.Raise) else None
                raised = raised.func if isinstance(raised, ast.Call) else raised
                if isinstance(raised, ast.Name) and raised.id in _BARE:
                    found.append((module_name(path), function.name, node.lineno, raised.id))
    return found


def test_every_raise_is_an_idfields_error() -> None:
    bare = [
        f"{module}:{line} {function}() raises {error}"
        for module, function, line, error in sorted(set(bare_raises()))
        if (module, function) not in PROTOCOL_RAISES
    ]
    assert not bare, "raise an idfields.errors class (with the builtin as a base):\n" + "\n".join(
        bare
    )


def test_the_scan_finds_a_bare_raise() -> None:
    assert ("idfields.layouts._layout", "__getitem__") in {(m, f) for m, f, _, _ in bare_raises()}
