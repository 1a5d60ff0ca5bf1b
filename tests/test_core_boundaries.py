"""The core stays free of the ORMs, and the package ships what type checkers need."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import idfields

CORE_MODULES = [
    "idfields",
    "idfields.codecs",
    "idfields.generators",
    "idfields.layouts",
    "idfields.nodes",
    "idfields.cli",
    "idfields.compare",
    "idfields.coordination",
    "idfields.hostshared",
    "idfields.migrations",
    "idfields.migrations.convert",
    "idfields.redisid",
    "idfields.runids",
    "idfields.sql",
]


def test_the_core_imports_neither_django_nor_sqlalchemy() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {CORE_MODULES!r}: importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'sqlalchemy')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_package_is_typed() -> None:
    assert (Path(idfields.__file__).parent / "py.typed").exists()


def test_public_names_are_exported() -> None:
    assert len(set(idfields.__all__)) == len(idfields.__all__)
    for name in idfields.__all__:
        assert hasattr(idfields, name), name
