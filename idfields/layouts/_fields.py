"""The four kinds of field a layout is made of, as plain immutable data.

Widths are bits in a binary layout and decimal digits in a decimal one; the layout decides which.
A field's range defaults to the whole width and can be narrowed with ``minimum``/``maximum``.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from datetime import UTC, datetime

from idfields.errors import LayoutError

UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

#: Nanoseconds per tick for each supported timestamp unit.
UNITS: dict[str, int] = {
    "s": 1_000_000_000,
    "10ms": 10_000_000,
    "ms": 1_000_000,
    "us": 1_000,
    "100ns": 100,
    "ns": 1,
}


@dataclass(frozen=True)
class Timestamp:
    """Time since ``epoch`` in ``unit`` ticks; ``wraps`` counts modulo its width (TraceId)."""

    width: int
    _: KW_ONLY
    unit: str = "ms"
    epoch: datetime = UNIX_EPOCH
    wraps: bool = False
    name: str = "timestamp"
    minimum: int = 0
    maximum: int | None = None

    def __post_init__(self) -> None:
        _whole_numbers(self, "width", "minimum", "maximum")


@dataclass(frozen=True)
class Node:
    """Who issues the ID: a node, shard, host, generator id, launch id or run id.

    ``env`` names the environment variable a static deployment sets it from; ``zero_is_test``
    marks a field whose value 0 is reserved for tests (DecimalId's launch_id).
    """

    width: int
    _: KW_ONLY
    name: str = "node"
    env: str = "IDFIELDS_NODE_ID"
    minimum: int = 0
    maximum: int | None = None
    zero_is_test: bool = False

    def __post_init__(self) -> None:
        _whole_numbers(self, "width", "minimum", "maximum")


@dataclass(frozen=True)
class Sequence:
    """A counter that tells apart IDs of one node within one tick (or one generator block)."""

    width: int
    _: KW_ONLY
    name: str = "sequence"
    minimum: int = 0
    maximum: int | None = None

    def __post_init__(self) -> None:
        _whole_numbers(self, "width", "minimum", "maximum")


@dataclass(frozen=True)
class Constant:
    """A fixed value such as a layout version (the 3-bit version of Chibrary's call numbers)."""

    width: int
    _: KW_ONLY
    value: int = 0
    name: str = "version"

    def __post_init__(self) -> None:
        _whole_numbers(self, "width", "value")

    @property
    def minimum(self) -> int:
        return self.value

    @property
    def maximum(self) -> int:
        return self.value


FieldSpec = Timestamp | Node | Sequence | Constant


def _whole_numbers(spec: FieldSpec, *names: str) -> None:
    """Refuse a bool, float or str where a width or bound belongs (``True`` would pass as 1)."""
    for name in names:
        value = getattr(spec, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise LayoutError(
                f"{type(spec).__name__} field {spec.name!r}: {name}={value!r} is not a whole "
                "number; pass an int"
            )
