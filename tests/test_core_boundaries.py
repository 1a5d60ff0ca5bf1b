"""The layers are import-linter contracts (``[tool.importlinter]`` in pyproject.toml, run by
``make test``); these tests keep the contracts complete, and the package typed and exported."""

from __future__ import annotations

import tomllib
from pathlib import Path

import idfields

PACKAGE = Path(idfields.__file__).parent
ORM_SIDES = (
    "idfields.django_app",
    "idfields.sqlalchemy_ext",
    "idfields.migrations.django",
    "idfields.migrations.alembic",
)


def _contracts() -> dict[str, dict[str, object]]:
    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    return {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}


def _modules() -> list[str]:
    names = []
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(names)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_every_core_module_is_a_source_of_the_core_contracts() -> None:
    contracts = _contracts()
    packages: list[str] = contracts["core"]["source_modules"]  # type: ignore[assignment]
    roots: list[str] = contracts["core-roots"]["source_modules"]  # type: ignore[assignment]
    core = [m for m in _modules() if not any(_within(m, side) for side in ORM_SIDES)]
    assert "idfields.layouts._layout" in core and "idfields.django_app.fields" not in core
    uncovered = [m for m in core if m not in roots and not any(_within(m, p) for p in packages)]
    assert not uncovered, f"add {uncovered} to the 'core' contract in pyproject.toml"


def test_each_orm_side_is_a_source_of_its_contract() -> None:
    contracts = _contracts()
    sides = [
        *contracts["django-side"]["source_modules"],
        *contracts["sqlalchemy-side"]["source_modules"],
    ]  # type: ignore[misc]
    assert sorted(sides) == sorted(ORM_SIDES)


def test_the_package_is_typed() -> None:
    assert (PACKAGE / "py.typed").exists()


def test_public_names_are_exported() -> None:
    assert len(set(idfields.__all__)) == len(idfields.__all__)
    for name in idfields.__all__:
        assert hasattr(idfields, name), name
