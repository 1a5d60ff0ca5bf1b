"""A test-only next SQL version, ``0002``: the shipped version's scripts with one function
changed (``clock_us()``), one added (``clock_s()``, revoked from PUBLIC) and one dropped
(``take_traceid_ranges(n)``), so the upgrade machinery (replace in place, drop the leftovers,
go back) stays tested without the package shipping old versions.

The scripts are derived from the shipped ones when a test asks for them, so they follow every
edit of the shipped SQL; each edit below must apply, or the fixture fails loudly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from idfields import sql

NEXT = "0002"

_CHANGED = (
    "    SELECT (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint;\n",
    "    SELECT (pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint;\n",
)
_ADDED = """-- Unix seconds of clock_timestamp(): the function the next version adds.
CREATE OR REPLACE FUNCTION idfields.clock_s() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL SAFE
BEGIN ATOMIC
    SELECT idfields.clock_us() / 1000000;
END;
REVOKE ALL ON FUNCTION idfields.clock_s() FROM PUBLIC;
COMMENT ON FUNCTION idfields.clock_s() IS 'unix seconds';

"""
_DROPPED = 'CREATE OR REPLACE FUNCTION idfields."take_traceid_ranges"('
_DROPPED_DROP = 'DROP FUNCTION IF EXISTS idfields."take_traceid_ranges"(bigint);\n'


def _edit(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise AssertionError(f"the next-version fixture no longer applies: {old!r} not found once")
    return text.replace(old, new)


def install_script() -> str:
    """The shipped install script turned into the next version's."""
    text = sql.load(sql.VERSION, "@lease_schema@")
    text = text.replace('"@lease_schema@"', "@lease_schema@")
    text = _edit(text, *_CHANGED)
    start = text.index(_DROPPED)
    text = text[:start] + text[text.index("END;\n\n", start) + len("END;\n\n") :]
    decoders = "-- Decoders, bound at creation."
    text = _edit(text, decoders, _ADDED + decoders)
    return _edit(text, f"'idfields SQL {sql.VERSION}'", f"'idfields SQL {NEXT}'")


def drop_script() -> str:
    """The shipped drop script for the next version's functions."""
    text = _edit(sql.load_drop(sql.VERSION), _DROPPED_DROP, "")
    clock_us = "DROP FUNCTION IF EXISTS idfields.clock_us();\n"
    return _edit(text, clock_us, "DROP FUNCTION IF EXISTS idfields.clock_s();\n" + clock_us)


def write(folder: Path) -> None:
    (folder / f"{NEXT}.sql").write_text(install_script(), encoding="utf-8")
    (folder / f"{NEXT}.drop.sql").write_text(drop_script(), encoding="utf-8")


@pytest.fixture
def next_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """This package as if it also shipped version ``0002``: its scripts in ``tmp_path``."""
    folder = tmp_path / "next_version"
    folder.mkdir()
    write(folder)
    monkeypatch.setattr(sql, "_FOLDERS", (*sql._FOLDERS, folder))
    return NEXT
