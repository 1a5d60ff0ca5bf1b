"""A layout: an ordered list of fields that packs (time, node, sequence) into one integer.

Binary layouts place fields by bit width (``value << shift``), decimal ones by digit width
(``value * 10**shift``), so a DecimalId reads as ``cccccccc ggggg lllll`` in base 10. The first
field is the most significant. Every ID a layout can hold lies in 1..2**63-1 (1..2**53-1 when
``js_safe``); a layout that could exceed that, or that cannot issue at all, fails here, at
construction, with a message naming the field and the fix.

A layout is frozen, and "valid shape" is kept apart from "usable now": a layout whose timestamp
has run out still constructs, loads from its spec (an old migration must replay for decades) and
decodes; only the generators refuse to issue from it, naming its end date.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any, Literal

from idfields.errors import LayoutError, ValueOutOfRange, WrongArgumentType
from idfields.layouts._fields import UNITS, Constant, FieldSpec, Node, Sequence, Timestamp
from idfields.layouts._geometry import TickGeometry

MAX_ID = 2**63 - 1
MAX_JS_SAFE_ID = 2**53 - 1
_SECONDS_PER_YEAR = 365.2425 * 86_400

# The built-in layouts by name, which ``idfields.layouts._builtin`` registers as it defines them
# (``idfields.layouts`` imports it, so they are known before any Layout is used). A layout equal
# to one of them leases under the bare name: see Layout.lease_key.
_bare_lease_keys: dict[str, Layout] = {}


def keep_bare_lease_key(layout: Layout) -> Layout:
    """Register a built-in ``layout``: it, and every layout equal to it, leases under its name."""
    _bare_lease_keys[layout.name] = layout
    return layout


@dataclass(frozen=True)
class PlacedField:
    """A field with its resolved range and the multiplier that places it inside the ID."""

    spec: FieldSpec
    multiplier: int
    radix: int
    minimum: int
    maximum: int

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def size(self) -> int:
        """How many values the field can take."""
        return self.maximum - self.minimum + 1


@dataclass(frozen=True)
class Decoded:
    """An ID taken apart. ``time`` is UTC; ``in_layout`` is False when a field is out of range."""

    layout: str
    id: int
    values: dict[str, int]
    time: datetime | None
    time_ns: int | None
    in_layout: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "id": self.id,
            "fields": self.values,
            "time": self.time.isoformat() if self.time else None,
            "time_ns": self.time_ns,
            "in_layout": self.in_layout,
        }


class Layout:
    """An immutable, validated ID layout; see the module docstring."""

    __slots__ = (
        "_by_name",
        "_frozen",
        "_stamp",
        "base",
        "description",
        "fields",
        "js_safe",
        "limit",
        "max_id",
        "name",
        "node_fields",
        "placed",
        "sequence",
        "timestamp",
    )

    # Layouts are shared process-wide (SNOWFLAKE, settings, generators), so none may change.
    def __setattr__(self, name: str, value: object) -> None:
        if getattr(self, "_frozen", False):
            raise dataclasses.FrozenInstanceError(
                f"layout {self.name!r} is immutable (cannot set {name!r}); build a new Layout"
            )
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"layout {self.name!r} is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        # pickle and copy rebuild through the constructor (the slots cannot be set afterwards).
        return (type(self).from_spec, (self.to_spec(),))

    def __init__(
        self,
        name: str,
        fields: Iterable[FieldSpec],
        *,
        base: Literal[2, 10] = 2,
        js_safe: bool = False,
        description: str = "",
    ) -> None:
        self.name = name
        self.fields: tuple[FieldSpec, ...] = tuple(fields)
        self.base = base
        self.js_safe = js_safe
        self.description = description
        self.limit = MAX_JS_SAFE_ID if js_safe else MAX_ID
        self._check_shape()
        self.placed = self._place()
        self._by_name = MappingProxyType({placed.name: placed for placed in self.placed})
        self.timestamp = self._only(Timestamp)
        self._stamp = next((s for s in self.fields if isinstance(s, Timestamp)), None)
        self.sequence = self._only(Sequence)
        self.node_fields = tuple(p for p in self.placed if isinstance(p.spec, Node))
        self.max_id = sum(p.maximum * p.multiplier for p in self.placed)
        self._check_capacity()
        self._check_time()
        self._frozen = True

    # -- construction -------------------------------------------------------------------------

    def _fail(self, problem: str, fix: str) -> LayoutError:
        return LayoutError(f"layout {self.name!r}: {problem}; {fix}")

    def _check_shape(self) -> None:
        if not self.name:
            raise LayoutError("a layout needs a name; pass name='my_layout'")
        if self.base not in (2, 10):
            raise self._fail(f"base {self.base} is not supported", "use base=2 or base=10")
        if not self.fields:
            raise self._fail("it has no fields", "give at least a timestamp or a sequence")
        names = [spec.name for spec in self.fields]
        for name in names:
            if names.count(name) > 1:
                raise self._fail(f"field name {name!r} is used twice", "give each field a name")
        kinds = [type(spec) for spec in self.fields]
        for kind in (Timestamp, Sequence):
            if kinds.count(kind) > 1:
                raise self._fail(f"it has {kinds.count(kind)} {kind.__name__} fields", "keep one")
        if Timestamp not in kinds and Sequence not in kinds:
            raise self._fail("it has neither a Timestamp nor a Sequence", "add one of them")
        if Timestamp not in kinds and Node not in kinds:
            raise self._fail(
                "a layout without a Timestamp needs a Node (generator or run id) to stay unique "
                "across processes",
                "add a Node field",
            )
        if (
            Timestamp in kinds
            and Sequence in kinds
            and kinds.index(Sequence) < kinds.index(Timestamp)
        ):
            raise self._fail(
                "the Sequence comes before the Timestamp, so IDs would not grow with time",
                "put the Sequence after the Timestamp",
            )

    def _place(self) -> tuple[PlacedField, ...]:
        placed: list[PlacedField] = []
        shift = 0
        for spec in reversed(self.fields):
            unit = "bits" if self.base == 2 else "digits"
            if spec.width <= 0:
                raise self._fail(
                    f"field {spec.name!r} has width {spec.width}", f"give it at least 1 {unit[:-1]}"
                )
            radix = self.base**spec.width
            maximum = radix - 1 if spec.maximum is None else spec.maximum
            if not 0 <= spec.minimum <= maximum <= radix - 1:
                raise self._fail(
                    f"field {spec.name!r} range {spec.minimum}..{maximum} does not fit "
                    f"{spec.width} {unit} (0..{radix - 1})",
                    "widen the field or narrow its range",
                )
            placed.append(PlacedField(spec, self.base**shift, radix, spec.minimum, maximum))
            shift += spec.width
        return tuple(reversed(placed))

    def _only(self, kind: type) -> PlacedField | None:
        return next((p for p in self.placed if isinstance(p.spec, kind)), None)

    def _check_capacity(self) -> None:
        if self.max_id <= self.limit:
            return
        top = self.placed[0]
        rest = self.max_id - top.maximum * top.multiplier
        fitting = (self.limit - rest) // top.multiplier
        bound = "2**53-1 (js_safe)" if self.js_safe else "2**63-1"
        raise self._fail(
            f"its largest ID {self.max_id} exceeds {bound}",
            f"narrow the widths, or give the first field {top.name!r} maximum={fitting}"
            if fitting >= top.minimum
            else "narrow the widths",
        )

    def _check_time(self) -> None:
        # A timestamp that has run out is not checked here: the layout stays loadable and
        # decodable, and the generators refuse to issue from it, naming its end date.
        spec = self._stamp
        if spec is None:
            return
        if spec.unit not in UNITS:
            raise self._fail(
                f"timestamp unit {spec.unit!r} is unknown", f"use one of {', '.join(UNITS)}"
            )
        if spec.epoch.tzinfo is None:
            raise self._fail(
                "the epoch has no time zone", "pass an aware datetime, e.g. tzinfo=UTC"
            )
        if self.epoch_ns > time.time_ns():
            raise self._fail(
                f"the epoch {spec.epoch.isoformat()} is in the future",
                "choose an epoch in the past (the date the system started is a good one)",
            )

    # -- facts ------------------------------------------------------------------------------------

    def __getitem__(self, name: str) -> PlacedField:
        try:
            return self._by_name[name]
        except KeyError:
            known = ", ".join(self._by_name)
            raise KeyError(
                f"layout {self.name!r} has no field {name!r} (fields: {known})"
            ) from None

    def __repr__(self) -> str:
        return f"<Layout {self.name!r}: {self.field_summary}>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Layout):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def _identity(self) -> tuple[object, ...]:
        return (self.name, self.fields, self.base, self.js_safe)

    @property
    def lease_key(self) -> str:
        """The key of this layout's rows in the lease table: its identity, not just its name.

        A built-in layout keeps its bare name (the key its database functions and every earlier
        release use); any other layout adds a fingerprint of its spec, so a layout changed under
        an old name during a rolling deploy leases from a disjoint node space.
        """
        if _bare_lease_keys.get(self.name) == self:
            return self.name
        spec = {key: value for key, value in self.to_spec().items() if key != "description"}
        digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()
        return f"{self.name[:51]}#{digest[:12]}"

    @property
    def field_summary(self) -> str:
        unit = "b" if self.base == 2 else "d"
        return " | ".join(f"{spec.name}:{spec.width}{unit}" for spec in self.fields)

    @property
    def is_time_based(self) -> bool:
        return self.timestamp is not None

    @property
    def wraps(self) -> bool:
        return self._stamp is not None and self._stamp.wraps

    def _stamp_spec(self) -> Timestamp:
        if self._stamp is None:
            raise WrongArgumentType(f"layout {self.name!r} has no timestamp")
        return self._stamp

    @property
    def unit_ns(self) -> int:
        return UNITS[self._stamp_spec().unit]

    @property
    def epoch_ns(self) -> int:
        epoch = self._stamp_spec().epoch
        return (epoch - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000

    @property
    def geometry(self) -> TickGeometry:
        """The tick, sequence and fixed fields' place in an ID (TypeError without a timestamp)."""
        stamp, sequence = self.timestamp, self.sequence
        if stamp is None:
            raise WrongArgumentType(f"layout {self.name!r} has no timestamp")
        constants = sum(
            p.spec.value * p.multiplier for p in self.placed if isinstance(p.spec, Constant)
        )
        return TickGeometry(
            epoch_ns=self.epoch_ns,
            unit_ns=self.unit_ns,
            tick_multiplier=stamp.multiplier,
            modulus=stamp.radix,
            max_tick=None if self.wraps else stamp.maximum,
            ids_per_tick=self.ids_per_tick,
            step=sequence.multiplier if sequence else 1,
            fixed=constants + (sequence.minimum * sequence.multiplier if sequence else 0),
        )

    @property
    def ids_per_tick(self) -> int:
        """IDs one node may issue per timestamp tick (or per generator block)."""
        return self.sequence.size if self.sequence else 1

    @property
    def ids_per_second(self) -> int | None:
        """Per-node capacity of a time-based layout; None where the clock does not bound it."""
        if self.timestamp is None:
            return None
        return self.ids_per_tick * 1_000_000_000 // self.unit_ns

    @property
    def node_count(self) -> int:
        """How many distinct issuers (nodes; generator x launch ids; run ids) the layout has."""
        return math.prod(p.size for p in self.node_fields)

    @property
    def period_seconds(self) -> float | None:
        """Seconds the timestamp covers before it runs out (or wraps)."""
        if self.timestamp is None:
            return None
        return self.timestamp.radix * self.unit_ns / 1e9

    @property
    def runs_out(self) -> datetime | None:
        """When a non-wrapping timestamp is exhausted; None past year 9999 or without one."""
        if self.timestamp is None or self.wraps:
            return None
        ticks = self.timestamp.maximum + 1
        try:
            return self._stamp_spec().epoch + timedelta(microseconds=ticks * self.unit_ns / 1000)
        except OverflowError:
            return None

    @property
    def runs_out_text(self) -> str:
        if self.timestamp is None:
            return "never by time: it runs out of node ids, not time"
        if self.wraps:
            return f"wraps every {self.timestamp.radix * self.unit_ns / 86_400e9:.1f} days"
        when = self.runs_out
        return when.isoformat() if when else "after year 9999"

    def tick_of(self, unix_ns: int) -> int:
        """The timestamp tick (unwrapped) of a moment given in ns since 1970."""
        return (unix_ns - self.epoch_ns) // self.unit_ns

    def first_id_at(self, unix_ns: int) -> int:
        """The smallest ID this layout can make in the tick of ``unix_ns`` (ns since 1970) or
        later: every ID made in an earlier tick is below it, so ``id < first_id_at(t)`` selects
        IDs made before ``t``. Needs a leading timestamp that does not wrap."""
        stamp = self.placed[0]
        if not isinstance(stamp.spec, Timestamp) or stamp.spec.wraps:
            raise LayoutError(
                f"layout {self.name!r} does not sort its IDs by time (they lead with "
                f"{stamp.name!r}{', which wraps' if self.wraps else ''}), so no ID separates "
                "earlier IDs from later ones; use a time-leading layout such as 'snowflake'"
            )
        tick = min(max(self.tick_of(unix_ns), stamp.minimum), stamp.maximum)
        return tick * stamp.multiplier + sum(p.minimum * p.multiplier for p in self.placed[1:])

    # -- compose and decode -----------------------------------------------------------------------

    def compose(self, values: Mapping[str, int] | None = None, /, **fields: int) -> int:
        """Pack field values into an ID, checking every range (a wrapping timestamp is reduced)."""
        given = {**(values or {}), **fields}
        unknown = set(given) - set(self._by_name)
        if unknown:
            raise ValueOutOfRange(
                f"layout {self.name!r} has no field {sorted(unknown)[0]!r}; "
                f"its fields are {', '.join(self._by_name)}"
            )
        result = 0
        for placed in self.placed:
            spec = placed.spec
            if isinstance(spec, Constant):
                value = given.get(placed.name, spec.value)
            elif placed.name in given:
                value = given[placed.name]
            else:
                raise ValueOutOfRange(
                    f"layout {self.name!r}: no value for field {placed.name!r}; pass it"
                )
            if isinstance(spec, Timestamp) and spec.wraps:
                value %= placed.radix
            self.check_value(placed, value)
            result += value * placed.multiplier
        if result == 0:
            raise ValueOutOfRange(f"layout {self.name!r}: these values make ID 0, never issued")
        return result

    def check_value(self, placed: PlacedField, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueOutOfRange(
                f"field {placed.name!r} = {value!r} in layout {self.name!r} is not a whole "
                "number; pass an int"
            )
        if not placed.minimum <= value <= placed.maximum:
            raise ValueOutOfRange(
                f"field {placed.name!r} = {value} is out of range "
                f"{placed.minimum}..{placed.maximum} in layout {self.name!r}; "
                f"use a value in that range"
            )

    def decode(self, value: int, *, reference_ns: int | None = None) -> Decoded:
        """Take an ID apart. A wrapped timestamp resolves to its time nearest ``reference_ns``."""
        check_id(value)
        values: dict[str, int] = {}
        in_layout = value <= self.limit
        for index, placed in enumerate(self.placed):
            field_value = value // placed.multiplier
            if index:
                field_value %= placed.radix
            values[placed.name] = field_value
            in_layout = in_layout and placed.minimum <= field_value <= placed.maximum
        stamp = self.timestamp
        time_ns = self._time_ns(stamp, values, reference_ns) if stamp else None
        when = None
        if time_ns is not None:
            try:
                when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=time_ns // 1000)
            except (OverflowError, ValueError):
                when = None
        return Decoded(self.name, value, values, when, time_ns, in_layout)

    def _time_ns(self, stamp: PlacedField, values: Mapping[str, int], ref: int | None) -> int:
        tick = values[stamp.name]
        if self.wraps:
            now_tick = self.tick_of(time.time_ns() if ref is None else ref)
            half = stamp.radix // 2  # the nearest period: an ID may run a little ahead of now
            tick = now_tick + (tick - now_tick + half) % stamp.radix - half
        return self.epoch_ns + tick * self.unit_ns

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly description (CLI ``layouts --json``, the Django report)."""
        fields = []
        for placed in self.placed:
            entry: dict[str, Any] = {
                "name": placed.name,
                "kind": type(placed.spec).__name__.lower(),
                "width": placed.spec.width,
                "min": placed.minimum,
                "max": placed.maximum,
            }
            if isinstance(placed.spec, Timestamp):
                entry.update(
                    unit=placed.spec.unit,
                    epoch=placed.spec.epoch.isoformat(),
                    wraps=placed.spec.wraps,
                )
            fields.append(entry)
        return {
            "name": self.name,
            "base": self.base,
            "js_safe": self.js_safe,
            "max_id": self.max_id,
            "fields": fields,
            "ids_per_second_per_node": self.ids_per_second,
            "ids_per_tick": self.ids_per_tick,
            "nodes": self.node_count,
            "runs_out": self.runs_out_text,
            "period_years": (self.period_seconds or 0) / _SECONDS_PER_YEAR or None,
            "description": self.description,
        }

    def to_spec(self) -> dict[str, Any]:
        """The constructor arguments as plain data (what a migration stores to rebuild the layout
        the same way forever); :meth:`from_spec` is the inverse."""
        fields = []
        for spec in self.fields:
            entry: dict[str, Any] = {"kind": type(spec).__name__.lower()}
            for field in dataclasses.fields(spec):
                value = getattr(spec, field.name)
                entry[field.name] = value.isoformat() if isinstance(value, datetime) else value
            fields.append(entry)
        return {
            "name": self.name,
            "fields": fields,
            "base": self.base,
            "js_safe": self.js_safe,
            "description": self.description,
        }

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Layout:
        """Rebuild a layout from :meth:`to_spec` data, validated like any layout."""
        try:
            fields = [_field_from_spec(entry) for entry in spec["fields"]]
            options = {k: spec[k] for k in ("base", "js_safe", "description") if k in spec}
            return cls(spec["name"], fields, **options)
        except LayoutError:
            raise  # a well-formed spec of an invalid layout: its own message says what and why
        except (KeyError, TypeError, ValueError) as error:
            raise LayoutError(
                f"not a layout spec ({error!r}): pass the dict Layout.to_spec() returns"
            ) from None


_FIELD_KINDS: dict[str, type[FieldSpec]] = {
    kind.__name__.lower(): kind for kind in (Timestamp, Node, Sequence, Constant)
}


def _field_from_spec(entry: Mapping[str, Any]) -> FieldSpec:
    values = dict(entry)
    kind = _FIELD_KINDS[values.pop("kind")]
    if isinstance(values.get("epoch"), str):
        values["epoch"] = datetime.fromisoformat(values["epoch"])
    return kind(**values)


def check_id(value: object) -> int:
    """Reject anything that is not an ID in 1..2**63-1, with the reason."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueOutOfRange(f"an ID must be an integer, got {type(value).__name__}")
    if value <= 0:
        raise ValueOutOfRange(f"ID {value} is not positive; IDs lie in 1..{MAX_ID}")
    if value > MAX_ID:
        raise ValueOutOfRange(f"ID {value} exceeds 2**63-1 = {MAX_ID}, the largest bigint")
    return value
