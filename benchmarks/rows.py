"""The row every benchmark returns, and how a row is judged against its baseline."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict


class Row(TypedDict):
    """One measured figure. ``value`` None means not measured here; ``note`` then says why.

    ``target`` is the largest allowed ``value / baseline``; with ``higher_is_better`` (throughput
    units such as "ids/s") it is the smallest. Rows measured in paired rounds
    (:mod:`benchmarks.timing`) carry ``ratio``, the median of the per-round ratios to the
    baseline, its ``spread`` [min, max], the number of ``rounds`` and the ``load`` average range
    [min, max] seen during them; the verdict then uses that ratio, not ``value / baseline``.
    """

    group: str
    name: str
    value: float | None
    unit: str
    baseline: str | None
    target: float | None
    higher_is_better: NotRequired[bool]
    note: NotRequired[str]
    ratio: NotRequired[float]
    spread: NotRequired[list[float]]
    rounds: NotRequired[int]
    load: NotRequired[list[float]]


def make_row(
    group: str,
    name: str,
    value: float | None,
    unit: str,
    baseline: str | None,
    target: float | None = None,
    *,
    higher_is_better: bool | None = None,
    note: str | None = None,
) -> Row:
    """A row; the optional keys only where given (None leaves them out)."""
    row: Row = {
        "group": group,
        "name": name,
        "value": value,
        "unit": unit,
        "baseline": baseline,
        "target": target,
    }
    if higher_is_better is not None:
        row["higher_is_better"] = higher_is_better
    if note is not None:
        row["note"] = note
    return row


_REQUIRED: dict[str, type] = {"group": str, "name": str, "unit": str}
_OPTIONAL: dict[str, tuple[type, ...]] = {
    "value": (int, float),
    "baseline": (str,),
    "target": (int, float),
}


def check_rows(rows: object) -> list[Row]:
    """The rows of a module, or a ValueError naming the first malformed one and the fix."""
    if not isinstance(rows, list):
        raise ValueError(f"run() must return a list of row dicts, got {type(rows).__name__}")
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise ValueError(f"row {index} is a {type(row).__name__}, not a dict")
        for key, kind in _REQUIRED.items():
            if not isinstance(row.get(key), kind):
                raise ValueError(f"row {index} ({row.get('name')!r}) needs {key!r}: a string")
        for key, kinds in _OPTIONAL.items():
            if key not in row:
                raise ValueError(f"row {index} ({row['name']!r}) needs key {key!r} (or None)")
            if row[key] is not None and not isinstance(row[key], kinds):
                raise ValueError(f"row {index} ({row['name']!r}): {key!r} = {row[key]!r}")
    return rows


@dataclass(frozen=True)
class Verdict:
    """A row compared to its baseline: the ratio, whether the target is met, and for a miss the
    measured cost per row (or per ID, per transaction) above the baseline."""

    ratio: float | None
    met: bool | None  # None: no target, or nothing to compare
    text: str
    cost: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "met": self.met, "verdict": self.text, "cost": self.cost}


# Throughput units and the per-item time their inverse gives (a missed rate costs time per item).
_PER_ITEM = {"rows/s": "us/row", "tps": "us/txn", "ids/s": "us/ID"}


def _cost(row: Row, base: Row, ratio: float) -> str:
    """What ``row`` spends per item beyond ``base``, in the row's own time unit, from the (paired)
    ratio: the baseline's median scaled by it, so the cost agrees with the verdict."""
    theirs = base["value"]
    if not theirs or not ratio:
        return ""
    if row["unit"] in _PER_ITEM:  # a rate: the time per item is its inverse
        return f"{_short(1e6 / theirs * (1 / ratio - 1))} {_PER_ITEM[row['unit']]}"
    return f"{_short(theirs * (ratio - 1))} {row['unit']}"


def _short(number: float) -> str:
    """Signed: a miss of a target below 1.0 can still cost less than the baseline."""
    return f"{number:+,.0f}" if abs(number) >= 100 else f"{number:+.3g}"


def judge(row: Row, group: Iterable[Row]) -> Verdict:
    """Compare ``row`` to the row of its group named by ``row["baseline"]``: the paired median
    ratio when the row has one, else ``value / baseline value``."""
    if row["value"] is None or row["baseline"] is None:
        return Verdict(None, None, "")
    base = next((other for other in group if other["name"] == row["baseline"]), None)
    if base is None or not base["value"]:
        return Verdict(None, None, f"baseline {row['baseline']!r} not measured")
    ratio = row.get("ratio", row["value"] / base["value"])
    target = row["target"]
    if target is None:
        return Verdict(ratio, None, "")
    if row.get("higher_is_better", False):
        if ratio >= target:
            return Verdict(ratio, True, "met")
        return Verdict(
            ratio, False, f"MISSED by {(1 - ratio / target) * 100:.1f}%", _cost(row, base, ratio)
        )
    if ratio <= target:
        return Verdict(ratio, True, "met")
    return Verdict(
        ratio, False, f"MISSED by {(ratio / target - 1) * 100:.1f}%", _cost(row, base, ratio)
    )
