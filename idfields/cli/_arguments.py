"""Turn command-line text into checked values; every rejection names the problem and the fix.

Commands parse their arguments here rather than through argparse ``type=``, which would replace
these messages with a bare "invalid value".
"""

from __future__ import annotations

from idfields.errors import UsageError
from idfields.layouts import MAX_ID, check_id

MAX_COUNT = 1_000_000


def id_value(text: str) -> int:
    """An ID in 1..2**63-1, written in decimal (``_`` between digits allowed, as in Python)."""
    return check_id(_integer(text, f"{text!r} is not an integer", f"pass an ID in 1..{MAX_ID}"))


def count(text: str) -> int:
    """``--count``: how many IDs ``new`` prints."""
    value = _integer(text, f"--count {text!r} is not an integer", "pass a whole number")
    if not 1 <= value <= MAX_COUNT:
        raise UsageError(f"--count {value} is out of range; pass 1..{MAX_COUNT:,}")
    return value


def node_values(text: str) -> int | dict[str, int]:
    """``--node``: ``7`` for a layout with one node field, or ``name=value,name=value``."""
    if "=" not in text:
        return _integer(text, f"--node {text!r} is not an integer", "pass a whole number")
    values: dict[str, int] = {}
    for part in text.split(","):
        name, sep, raw = (piece.strip() for piece in part.partition("="))
        if not sep or not name:
            raise UsageError(
                f"--node {text!r}: {part!r} is not name=value; "
                "write e.g. --node generator_id=92,launch_id=65"
            )
        if name in values:
            raise UsageError(f"--node {text!r} gives {name} twice; give each field once")
        values[name] = _integer(raw, f"--node {name}={raw!r} is not an integer", "pass a number")
    return values


def _integer(text: str, problem: str, fix: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise UsageError(f"{problem}; {fix} in decimal digits") from None
