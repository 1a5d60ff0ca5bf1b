"""The database-side SQL, shipped as package data, one immutable file per released version.

A migration names the version it installs (``load("0002")``) and never "the current" one, so an
old migration replays the same way forever; :data:`LATEST` is only for new migrations to copy.
From 0002 on the functions name the schema of the idfields tables (``lease_schema``) instead of
assuming ``public``: the install operations find it (:data:`FIND_LEASE_SCHEMAS`,
:func:`lease_schema_from`) or take it as a parameter recorded in the migration.
"""

from __future__ import annotations

import re
from importlib import resources

LATEST = "0005"

_VERSION = re.compile(r"\d{4}")
_SCHEMA_TOKEN = "@lease_schema@"

#: The schemas on the session's search_path that hold an ``idfields_node_lease`` table, in
#: search_path order: where an install without ``lease_schema`` finds the tables.
FIND_LEASE_SCHEMAS = (
    "SELECT n.nspname FROM pg_catalog.unnest(pg_catalog.current_schemas(false)) "
    "WITH ORDINALITY AS s(name, position) "
    "JOIN pg_catalog.pg_namespace AS n ON n.nspname OPERATOR(pg_catalog.=) s.name "
    "JOIN pg_catalog.pg_class AS c ON c.relnamespace OPERATOR(pg_catalog.=) n.oid "
    "AND c.relname OPERATOR(pg_catalog.=) 'idfields_node_lease' "
    "ORDER BY s.position"
)


def available() -> list[str]:
    """Every released version of the functions, oldest first."""
    folder = resources.files(__package__).joinpath("functions")
    return sorted(
        entry.name.removesuffix(".sql")
        for entry in folder.iterdir()
        if _VERSION.fullmatch(entry.name.removesuffix(".sql")) and entry.name.endswith(".sql")
    )


def load(version: str, lease_schema: str = "public") -> str:
    """The install script of ``version``: idempotent DDL (CREATE SCHEMA/OR REPLACE FUNCTION),
    leasing from the idfields tables in ``lease_schema`` (0001 knows only ``public``)."""
    script = _read(version, "")
    if _SCHEMA_TOKEN not in script:
        if lease_schema != "public":
            raise ValueError(
                f"idfields SQL {version} leases from schema public only, not {lease_schema!r}; "
                f"install version {LATEST} to name the schema"
            )
        return script
    if not isinstance(lease_schema, str) or not lease_schema or "\0" in lease_schema:
        raise ValueError(f"lease_schema must be a schema name, got {lease_schema!r}")
    return script.replace(_SCHEMA_TOKEN, '"' + lease_schema.replace('"', '""') + '"')


def needs_lease_schema(version: str) -> bool:
    """Whether ``version`` names the tables' schema (0002 on) rather than assuming public."""
    return _SCHEMA_TOKEN in _read(version, "")


def lease_schema_from(found: list[str]) -> str:
    """The one schema of :data:`FIND_LEASE_SCHEMAS`' rows; none, or two copies, is refused:
    with two, app and database could lease from different tables and repeat IDs."""
    if len(found) == 1:
        return found[0]
    if not found:
        raise ValueError(
            "idfields: no idfields_node_lease table on this connection's search_path; create "
            "the idfields tables first (Django: the idfields app's migrations; SQLAlchemy: "
            "idfields.sqlalchemy_ext.metadata), or pass lease_schema='<schema>'"
        )
    raise ValueError(
        f"idfields: idfields_node_lease exists in {len(found)} schemas on the search_path "
        f"({', '.join(found)}); app and database could lease from different tables and repeat "
        f"IDs. Keep one copy, or pass lease_schema='<the schema the app uses>'"
    )


def load_drop(version: str) -> str:
    """The script that removes what ``load(version)`` created (refused while a default uses it)."""
    return _read(version, ".drop")


def load_leftovers(version: str, replaced_by: str) -> str:
    """What ``version`` installed that ``replaced_by`` does not: its drop statements missing
    from ``replaced_by``'s drop file, in their order. Run after ``load(replaced_by)`` over
    ``version`` (a downgrade), so the next step back finds only its own functions."""
    kept = set(_drop_statements(replaced_by))
    return "".join(
        f"{statement};\n" for statement in _drop_statements(version) if statement not in kept
    )


def _drop_statements(version: str) -> list[str]:
    """The statements of a drop file, comments stripped and whitespace made single spaces."""
    lines = (line.split("--", 1)[0] for line in load_drop(version).splitlines())
    return [" ".join(part.split()) for part in " ".join(lines).split(";") if part.strip()]


def _read(version: str, suffix: str) -> str:
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        raise ValueError(f"SQL version must be four digits such as '0001', got {version!r}")
    if version not in available():
        raise ValueError(
            f"no idfields SQL version {version!r}; released versions: {', '.join(available())}"
        )
    path = resources.files(__package__).joinpath("functions", f"{version}{suffix}.sql")
    return path.read_text(encoding="utf-8")
