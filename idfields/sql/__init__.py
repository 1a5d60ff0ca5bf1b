"""The database-side SQL, shipped as package data: ``functions/<version>.sql`` installs the ID
functions of one version, ``functions/<version>.drop.sql`` removes them.

The install script records its version in the comment of schema ``idfields``
(``COMMENT ON SCHEMA``): the install operations read it (:data:`INSTALLED`,
:func:`installed_version`) and build what to run from it (:func:`install_script`), so an upgrade
knows what it replaces without being told, and a database holding a version this package does
not know is refused instead of half replaced. The comment lives and dies with the schema, needs
no table of its own, grant or drop statement, and pg_dump carries it.

Each version's scripts are fixed files: ``functions/<version>.sha256`` records their digests,
and a test fails when a recorded script changes (``tests/sql_versions.py`` says how a version is
edited before its release). The built-in snowflake and traceid functions (but their decoders)
sit in them as the template of user layouts renders them
(:func:`idfields.sql.layouts.render_builtin_functions`), so a later renderer never moves what a
released version installs.

The functions name the schema of the idfields tables (``lease_schema``): the install operations
find it (:data:`FIND_LEASE_SCHEMAS`, :func:`lease_schema_from`) or take it as a parameter
recorded in the migration.
"""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable

from idfields.errors import InvalidArgument
from idfields.sql.noderange import node_range
from idfields.sql.scripts import statements

__all__ = ["load"]

#: The version this package installs: its one SQL file, which its migrations name.
VERSION = "0001"

_VERSION = re.compile(r"\d{4}")
_SCHEMA_TOKEN = "@lease_schema@"
_COMMENT = re.compile(r"idfields SQL (\d{4})")
# Where the scripts are looked up, in this order: the package's own folder (tests add one).
_FOLDERS: tuple[Traversable, ...] = (resources.files(__package__).joinpath("functions"),)

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

#: Schema ``idfields``'s comment and whether it holds functions: no row when it does not exist.
INSTALLED = (
    "SELECT pg_catalog.obj_description(n.oid, 'pg_namespace'), EXISTS ("
    "SELECT FROM pg_catalog.pg_proc AS p WHERE p.pronamespace OPERATOR(pg_catalog.=) n.oid) "
    "FROM pg_catalog.pg_namespace AS n WHERE n.nspname OPERATOR(pg_catalog.=) 'idfields'"
)


def available() -> list[str]:
    """Every version whose scripts this package has, oldest first."""
    return sorted(
        entry.name.removesuffix(".sql")
        for folder in _FOLDERS
        for entry in folder.iterdir()
        if entry.name.endswith(".sql") and _VERSION.fullmatch(entry.name.removesuffix(".sql"))
    )


def known(version: str) -> str:
    """``version``, refused unless this package has its scripts (naming the ones it has)."""
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        raise InvalidArgument(
            f"idfields SQL versions are four digits such as '0001', got {version!r}"
        )
    if version not in available():
        raise InvalidArgument(
            f"idfields has no SQL version {version!r} (it has {', '.join(available())}): name "
            f"one of those, or install the idfields release that ships {version}"
        )
    return version


def previous(version: str) -> str | None:
    """The version before ``version``: what undoing its install goes back to (None: nothing)."""
    older = [name for name in available() if name < known(version)]
    return older[-1] if older else None


def load(version: str, lease_schema: str = "public", nodes: object = None) -> str:
    """The install script of ``version``: idempotent DDL (CREATE SCHEMA/OR REPLACE FUNCTION),
    leasing from the idfields tables in ``lease_schema``, issuing on ``nodes`` (see
    :func:`idfields.sql.noderange.node_range`; None: every node)."""
    if not isinstance(lease_schema, str) or not lease_schema or "\0" in lease_schema:
        raise InvalidArgument(f"lease_schema must be a schema name, got {lease_schema!r}")
    quoted = '"' + lease_schema.replace('"', '""') + '"'
    limits = node_range(nodes)
    return (
        _read(version, "")
        .replace(_SCHEMA_TOKEN, quoted)
        .replace("@first_node@", str(limits.first))
        .replace("@last_node@", str(limits.last))
    )


def load_drop(version: str) -> str:
    """The script that removes what ``load(version)`` created (refused while a default uses it)."""
    return _read(version, ".drop")


def load_leftovers(version: str, replaced_by: str) -> str:
    """What ``version`` installed that ``replaced_by`` does not: its drop statements missing
    from ``replaced_by``'s drop file, in their order. Run after ``load(replaced_by)`` over
    ``version``, so the database holds exactly ``replaced_by``'s functions."""
    kept = set(_drop_statements(replaced_by))
    return "".join(
        f"{statement};\n" for statement in _drop_statements(version) if statement not in kept
    )


def installed_version(rows: list[tuple[str | None, bool]]) -> str | None:
    """The version :data:`INSTALLED`'s ``rows`` record: None for no schema, or an empty one.
    Functions without a recorded version are refused: what to replace or drop is unknown."""
    if not rows:
        return None
    comment, has_functions = rows[0]
    found = _COMMENT.fullmatch(comment or "")
    if found:
        return found.group(1)
    if not has_functions:
        return None
    raise InvalidArgument(
        f"idfields: schema idfields holds functions but records no idfields SQL version (its "
        f"comment is {comment!r}), so what to replace or drop is unknown. Drop the schema "
        f"(DROP SCHEMA idfields CASCADE, once no column default calls its functions) and run "
        f"the migration again"
    )


def install_script(
    installed: str | None, version: str, lease_schema: str, nodes: object = None
) -> str:
    """What makes a database holding ``installed`` (None: nothing) hold exactly ``version``:
    its install script, then what only ``installed`` had dropped. An installed version this
    package has no scripts for is refused: its leftovers are unknown, and sessions keeping its
    state could read the replacing functions' settings wrongly."""
    script = load(known(version), lease_schema, nodes)
    if installed is None or installed == version:
        return script
    return script + load_leftovers(_recorded(installed, version), version)


def offline_install_script(version: str, lease_schema: str, nodes: object = None) -> str:
    """:func:`install_script` for a database that cannot be read beforehand (``alembic
    --sql``): a guard that refuses, when it runs, a recorded version this package does not
    know, then ``version``'s script, then the leftovers of every other version it knows
    (``DROP ... IF EXISTS``: only what is there goes)."""
    script = load(known(version), lease_schema, nodes)
    names = ", ".join(f"'idfields SQL {name}'" for name in available())
    guard = (
        "DO $guard$\nBEGIN\n"
        "    IF pg_catalog.obj_description(pg_catalog.to_regnamespace('idfields')::oid,\n"
        f"        'pg_namespace') NOT IN ({names}) THEN\n"
        "        RAISE EXCEPTION 'idfields: the database holds an idfields SQL version this "
        "script does not know'\n"
        f"            USING HINT = 'This script installs {version} over {', '.join(available())}"
        ". Run the migration with the idfields release that installed the database''s "
        "version.';\n"
        "    END IF;\nEND\n$guard$;\n"
    )
    leftovers = dict.fromkeys(
        line
        for other in available()
        if other != version
        for line in load_leftovers(other, version).splitlines(keepends=True)
    )
    return guard + script + "".join(leftovers)


def drop_script(installed: str | None, version: str) -> str:
    """What removes the functions from a database holding ``installed`` (None: ``version``'s
    drop file, which finds nothing to drop)."""
    return load_drop(known(version) if installed is None else _recorded(installed, version))


def lease_schema_from(found: list[str]) -> str:
    """The one schema of :data:`FIND_LEASE_SCHEMAS`' rows; none, or two copies, is refused:
    with two, app and database could lease from different tables and repeat IDs."""
    if len(found) == 1:
        return found[0]
    if not found:
        raise InvalidArgument(
            "idfields: no idfields_node_lease table on this connection's search_path; create "
            "the idfields tables first (Django: the idfields app's migrations; SQLAlchemy: "
            "idfields.sqlalchemy_ext.metadata), or pass lease_schema='<schema>'"
        )
    raise InvalidArgument(
        f"idfields: idfields_node_lease exists in {len(found)} schemas on the search_path "
        f"({', '.join(found)}); app and database could lease from different tables and repeat "
        f"IDs. Keep one copy, or pass lease_schema='<the schema the app uses>'"
    )


def _recorded(installed: str, wanted: str) -> str:
    if installed not in available():
        raise InvalidArgument(
            f"idfields: the database holds idfields SQL {installed}, which this idfields package "
            f"does not know (it has {', '.join(available())}), so it cannot replace it with "
            f"{wanted} or drop it: what {installed} installed is unknown. Run this migration "
            f"step with the idfields release that installed {installed} (to go back, downgrade "
            f"with that release first)"
        )
    return installed


def _drop_statements(version: str) -> list[str]:
    """The statements of a drop file, whitespace made single spaces so that two files compare
    statement by statement; a dollar-quoted body (a DO block) stays inside its statement."""
    return [" ".join(statement.split()) for statement in statements(load_drop(version))]


def _read(version: str, suffix: str) -> str:
    name = f"{known(version)}{suffix}.sql"
    for folder in _FOLDERS:
        path = folder.joinpath(name)
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise InvalidArgument(f"idfields SQL version {version} has no {name}")
