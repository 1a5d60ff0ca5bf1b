"""Plain text for people: aligned tables and grouped numbers (the CLI, the node reports).

The same data goes out unchanged as JSON where a command takes ``--json``.
"""

from __future__ import annotations

from collections.abc import Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: frozenset[int]) -> str:
    """Rows under headers, every column as wide as its widest cell; ``right`` aligns numbers."""
    widths = [max(len(row[index]) for row in (headers, *rows)) for index in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        padded = (
            cell.rjust(width) if index in right else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=True))
        )
        return "  ".join(padded).rstrip()

    return "\n".join(line(row) for row in (headers, *rows))


def pairs(items: Sequence[tuple[str, str]]) -> str:
    """``key  value`` lines with the values in one column (``inspect``)."""
    width = max(len(key) for key, _ in items)
    return "\n".join(f"{key.ljust(width)}  {value}" for key, value in items)


def grouped(number: int | None) -> str:
    """``4,096,000`` reads faster than ``4096000``; None shows as a dash."""
    return "-" if number is None else f"{number:,}"
