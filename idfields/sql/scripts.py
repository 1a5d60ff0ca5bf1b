"""SQL text in the shape every driver accepts: one statement at a time, with named parameters.

A script of several statements runs in one call only where the driver sends it as a simple
query (psycopg without parameters); asyncpg prepares every statement and refuses a second one
(``cannot insert multiple commands into a prepared statement``), so :func:`statements` cuts a
script where psql would: never inside a string, a quoted name, a comment, a dollar-quoted body
or a ``BEGIN ATOMIC ... END`` body. The queries of this package are written with ``%s``
placeholders (psycopg, PyMySQL, Django); :func:`named_placeholders` turns them into the ``:p0``
style of SQLAlchemy's ``text()``, which compiles to each driver's own paramstyle (``$1`` on
asyncpg).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Sequence

# Implementation: nothing here is API.
__all__: list[str] = []

_TOKEN = re.compile(
    r"""
      (?P<comment> --[^\n]* | /\*.*?\*/ )
    | (?P<end> ; )
    | (?P<word> [A-Za-z_][A-Za-z_0-9$]* )
    | '(?:[^']|'')*' | "(?:[^"]|"")*"
    | (?P<tag> \$(?:[A-Za-z_][A-Za-z_0-9]*)?\$ ) .*? (?P=tag)
    | [^-/'"$;A-Za-z_]+ | .
    """,
    re.DOTALL | re.VERBOSE,
)
_ROUTINES = {"FUNCTION", "PROCEDURE"}
_PLACEHOLDER = re.compile("%%|%s")


def statements(script: str) -> list[str]:
    """The statements of ``script``, in order, without their ``;`` and the comments between
    them (a dollar-quoted body keeps its own); empty ones are left out."""
    found: list[str] = []
    current: list[str] = []
    words: list[str] = []  # the statement's first words: is it CREATE [OR REPLACE] FUNCTION?
    depth = 0  # BEGIN ATOMIC bodies (and CASE ... END inside them) still open, as psql counts
    for token in _TOKEN.finditer(script):
        if token["comment"] is not None:
            current.append(" ")
            continue
        if token["end"] is not None and depth == 0:
            found.append("".join(current).strip())
            current, words = [], []
            continue
        current.append(token[0])
        word = (token["word"] or "").upper()
        if not word:
            continue
        if len(words) < 4:
            words.append(word)
        if words[0] == "CREATE" and _ROUTINES & set(words[1:]):
            if word == "BEGIN" or (depth and word == "CASE"):
                depth += 1
            elif depth and word == "END":
                depth -= 1
    found.append("".join(current).strip())
    return [statement for statement in found if statement]


def qualify(sql: str, tables: Collection[str], prefix: str) -> str:
    """``sql`` with each name in ``tables`` written ``prefix`` + name (``prefix``: a quoted
    schema and a dot): where the query names the table, and where a string names it for
    ``to_regclass()``. Comments, other strings and dollar-quoted bodies stay as they are."""

    def one(token: re.Match[str]) -> str:
        text = token[0]
        if token["word"] in tables:
            return prefix + text
        if text.startswith("'") and text[1:-1] in tables:
            return "'" + (prefix + text[1:-1]).replace("'", "''") + "'"
        return text

    return "".join(one(token) for token in _TOKEN.finditer(sql))


def named_placeholders(sql: str) -> str:
    """``sql`` with its ``%s`` as ``:p0``, ``:p1``... (:func:`named_params` gives their values),
    ``%%`` as ``%``, and every other colon escaped (``\\:``) so ``text()`` leaves casts alone."""
    numbers = itertools.count()
    return _PLACEHOLDER.sub(
        lambda m: "%" if m[0] == "%%" else f":p{next(numbers)}", sql.replace(":", "\\:")
    )


def named_params(params: Sequence[object]) -> dict[str, object]:
    """The values of :func:`named_placeholders`' parameters, by name."""
    return {f"p{index}": value for index, value in enumerate(params)}
