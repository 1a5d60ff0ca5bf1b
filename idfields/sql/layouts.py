"""Database-side ID functions of a time-based layout: ``idfields.next_<name>()``, its test hook
``idfields.next_<name>_at(now_tick bigint)``, the bulk forms ``idfields.take_<name>(n)`` and
``take_<name>_ranges(n)``, what they run as the owner (``issue_<name>...``), and for user layouts
``idfields.decode_<name>(id[, reference])``. The built-in snowflake and traceid functions are
rendered here too (:func:`render_builtin_functions`, written into the SQL version's scripts
between markers); their decoders are the SQL file's own.

A binary layout ``[Constant...] Timestamp [Constant...] Node [Constant...] Sequence`` can be
expressed: an inlined SQL hot path over a per-backend temporary sequence, growing timestamps
like ``next_snowflake()``, wrapping ones like ``next_traceid()``, all leasing under the layout's
:attr:`~Layout.lease_key` like the app; the decoder is plain SQL like ``decode_snowflake()``,
agreeing with :meth:`Layout.decode`. Beyond its common case the hot path makes one PL/pgSQL call,
``idfields.issue_<name>(visible_lease)``, which checks a transaction's first ID (and an ID in a
new tick) itself, the geometry written in as literals, and hands anything else to
``idfields.time_next()``; the bulk forms call ``issue_<name>_ranges(n)``. The issuers run as the
owner (SECURITY DEFINER) and take no geometry, lease key or tick from the caller, so the internal
functions that do, the ``_at`` test hook and its ``issue_<name>_at`` are revoked from PUBLIC.
Every name is bound when the functions are created (BEGIN ATOMIC bodies, installed under a pinned
search_path). Anything else raises :class:`~idfields.errors.LayoutError` naming why and the fix.

The SQL is one template, ``templates/layout.sql`` (package data): its named sections hold every
statement and expression, and this module fills in their ``@name@`` placeholders with the
layout's names, literals and geometry. It depends only on the layout's data (golden files in
``tests/pg/golden/`` hold it for sample layouts). A migration operation stores the SQL it
installs, as Django's writer writes it, so a migration replays the same way under any later
release (:func:`layout_scripts`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from importlib import resources
from typing import Any, TypeAlias

from idfields.errors import LayoutError
from idfields.layouts import (
    SNOWFLAKE,
    TRACEID,
    Constant,
    Layout,
    Node,
    PlacedField,
    Sequence,
    Timestamp,
)
from idfields.sql.fences import fence_nodes, fence_prefix

# Implementation: nothing here is API.
__all__: list[str] = []

#: What the migration operations accept: a layout, or the ``Layout.to_spec()`` dict of one.
LayoutLike: TypeAlias = Layout | Mapping[str, Any]

# 'idfields_' + name must fit PostgreSQL's 63-byte identifiers (the temporary sequence); GUC
# names fold case, so only lowercase names.
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,53}")
# Names whose functions or settings ('idfields.<name>', '_lease', '_limit') the built-ins use.
_TAKEN = frozenset({"snowflake", "traceid", "decimal", "decimal_generator"})
# The built-in layouts whose functions the renderer writes into the functions' SQL.
_BUILTINS = (SNOWFLAKE, TRACEID)
_SUFFIXES = ("_lease", "_limit")
_CLOCK_UNITS = ("s", "10ms", "ms", "us")  # clock_timestamp() has microseconds, no finer
_MIN_WRAP_S = 86_400
_SIGN = -(2**63)
_MAX_ID = 2**63 - 1
# The decoder's parameter and fixed column names, which a decoded field must not take.
_DECODER_NAMES = frozenset({"id", "reference", "time_ms", "time_us", "time", "in_layout"})
_US = timedelta(microseconds=1)
_UNIX = datetime(1970, 1, 1, tzinfo=UTC)
# Python's datetime range in unix microseconds: the decoder's "time" is NULL outside it, as
# Layout.decode's ``time`` is None.
_FIRST_US = (datetime.min.replace(tzinfo=UTC) - _UNIX) // _US
_LAST_US = (datetime.max.replace(tzinfo=UTC) - _UNIX) // _US
_DAY_US = 86_400_000_000


@dataclass(frozen=True)
class _Shape:
    """Where the fields of an expressible layout sit, in the slow path's terms."""

    name: str
    epoch_us: int
    unit_us: int
    ts_bits: int
    ts_shift: int
    wraps: bool
    node_shift: int
    node_min: int
    node_max: int
    seq_bits: int
    seq_min: int
    top: int  # constant bits above the timestamp
    fixed: int  # every constant field's bits

    @property
    def seq_mask(self) -> int:
        return (1 << self.seq_bits) - 1

    @property
    def max_ahead(self) -> int:
        """Ticks a backend may run ahead of the clock: 1 s, like the built-ins."""
        return max(1, 1_000_000 // self.unit_us)

    @property
    def lease_ms(self) -> int:
        """2 s, or five ticks when ticks are long (traceid's 5 s)."""
        return max(2000, 5 * self.unit_us // 1000)


def render_layout_function(layout: Layout) -> tuple[str, str]:
    """(create SQL, drop SQL) of a user layout's ``idfields.next_<name>()``,
    ``next_<name>_at(bigint)``, ``take_<name>(bigint)``, ``take_<name>_ranges(bigint)``,
    ``decode_<name>(bigint[, timestamptz])`` and the issuers ``issue_<name>``, ``_at`` and
    ``_ranges``."""
    shape = _shape(layout)
    functions, drop_functions = _render_functions(layout, shape)
    decoder, drop_decoder = _render_decoder(layout, shape)
    create = _fill("user_layout", name=shape.name, functions=functions, decoder=decoder)
    return create, drop_functions + drop_decoder


def render_builtin_functions() -> tuple[str, str]:
    """(create SQL, drop SQL) of the built-in snowflake and traceid functions but their
    decoders, from the template of user layouts, for the functions' SQL file: it pins the
    search_path itself."""
    rendered = [_render_functions(layout, _shape(layout, builtin=True)) for layout in _BUILTINS]
    return "".join(create for create, _ in rendered), "".join(drop for _, drop in rendered)


def sql_digest(script: str) -> str:
    """The sha256 a migration records of the SQL it installs (hex)."""
    return hashlib.sha256(script.encode("utf-8")).hexdigest()


def layout_scripts(
    layout: Layout,
    create_sql: str | None = None,
    drop_sql: str | None = None,
    sha256: str | None = None,
) -> tuple[str, str]:
    """(create SQL, drop SQL) a migration operation runs for ``layout``: what the migration
    stored, else what this release renders, refused unless it is what the migration recorded
    (``sha256``). Called when the operation runs, never when its migration is imported: a later
    renderer must not stop a project's migrations from loading."""
    if create_sql is not None and drop_sql is not None:
        return create_sql, drop_sql
    if create_sql is not None or drop_sql is not None:
        raise LayoutError(
            f"the migration operation of layout {layout.name!r} stores only one of create_sql "
            f"and drop_sql; store both (as Django's migration writer does) or neither"
        )
    create, drop = render_layout_function(layout)
    if sha256 is not None and sql_digest(create) != sha256:
        raise LayoutError(
            f"the SQL this idfields release renders for layout {layout.name!r} is not what "
            f"this migration recorded (sha256 {sha256[:12]}..., renders "
            f"{sql_digest(create)[:12]}...): the renderer changed since the migration was "
            f"written. A database that ran it keeps what it installed. To replay it as "
            f"written, give the operation the SQL it installed (create_sql=..., drop_sql=..., "
            f"as the release that wrote it renders them: render_layout_function(layout)); to "
            f"install this release's SQL instead, remove sha256= from the operation"
        )
    return create, drop


def as_layout(layout: LayoutLike) -> Layout:
    """A migration's layout argument as a :class:`Layout` (a stored spec is rebuilt)."""
    return layout if isinstance(layout, Layout) else Layout.from_spec(layout)


# -- what can be expressed ----------------------------------------------------------------------


def _shape(layout: Layout, *, builtin: bool = False) -> _Shape:
    """The layout's fields in the slow path's terms; ``builtin``: snowflake or traceid, whose
    names a user layout may not take."""

    def fail(problem: str, fix: str) -> LayoutError:
        return LayoutError(
            f"layout {layout.name!r} cannot be generated inside PostgreSQL: {problem}; {fix}"
        )

    if layout.base != 2:
        raise fail(
            "it is decimal (base 10), and the hot path counts by one in the lowest bits",
            "use a binary layout, or use idfields.next_decimal() for DecimalId",
        )
    name = layout.name
    if not _NAME.fullmatch(name):
        raise fail(
            "its name is not a safe SQL identifier part",
            "name it with 1-54 lowercase letters, digits and underscores, not starting with a "
            "digit (it becomes idfields.next_<name>() and pg_temp.idfields_<name>)",
        )
    if not builtin and (name in _TAKEN or name.endswith(_SUFFIXES)):
        raise fail(
            "its name is used by the built-in functions (idfields.next_snowflake(), "
            "next_traceid(), next_decimal()) or ends in _lease/_limit, their settings' suffixes",
            "install built-in layouts with InstallIdFunctions, and rename a user layout",
        )
    kinds = [type(spec) for spec in layout.fields]
    for kind in (Timestamp, Node, Sequence):
        if kinds.count(kind) != 1:
            raise fail(
                f"it has {kinds.count(kind)} {kind.__name__} fields, and the database functions "
                f"need exactly one",
                "shape it Timestamp | Node | Sequence (Constant fields may sit above the Sequence)",
            )
    if kinds[-1] is not Sequence:
        raise fail(
            "its Sequence is not the last (lowest) field",
            "put the Sequence last: the database counts IDs up by one",
        )
    if kinds.index(Node) < kinds.index(Timestamp):
        raise fail(
            "its Node comes before the Timestamp, so its IDs are not k-sorted across nodes",
            "put the Timestamp first (Timestamp | Node | Sequence)",
        )
    spec = next(field for field in layout.fields if isinstance(field, Timestamp))
    stamp, node, sequence = layout[spec.name], layout.node_fields[0], layout.placed[-1]
    if spec.unit not in _CLOCK_UNITS:
        raise fail(
            f"its timestamp unit {spec.unit!r} is finer than PostgreSQL's clock (1 us)",
            f"use one of {', '.join(_CLOCK_UNITS)}",
        )
    if stamp.minimum != 0 or stamp.maximum != stamp.radix - 1:
        raise fail(
            "its Timestamp range is narrowed",
            "drop the Timestamp's minimum/maximum, or narrow its width instead",
        )
    if sequence.maximum != sequence.radix - 1:
        raise fail(
            f"its Sequence stops at {sequence.maximum}, below its width's {sequence.radix - 1}",
            "drop the Sequence's maximum, or narrow its width instead",
        )
    if node.maximum > 2**31 - 1:
        raise fail(
            f"its Node reaches {node.maximum}, past the lease table's integer column",
            "give the Node at most 31 bits (or a maximum below 2**31)",
        )
    clash = sorted({stamp.name, node.name, sequence.name} & _DECODER_NAMES)
    if clash:
        raise fail(
            f"its field name {clash[0]!r} is a parameter or column of idfields.decode_{name}()",
            f"rename the field (not one of {', '.join(sorted(_DECODER_NAMES))})",
        )
    unit_us = layout.unit_ns // 1000
    if spec.wraps and stamp.radix * unit_us < _MIN_WRAP_S * 1_000_000:
        raise fail(
            "its wrapping timestamp repeats in less than a day, so a transaction left open "
            "that long could reissue IDs on a node it no longer leases",
            "widen the timestamp (or use a coarser unit) so one period lasts at least a day",
        )
    constants = [p for p in layout.placed if isinstance(p.spec, Constant)]
    return _Shape(
        name=name,
        epoch_us=layout.epoch_ns // 1000,
        unit_us=unit_us,
        ts_bits=spec.width,
        ts_shift=_bits(stamp.multiplier),
        wraps=spec.wraps,
        node_shift=_bits(node.multiplier),
        node_min=node.minimum,
        node_max=node.maximum,
        seq_bits=sequence.spec.width,
        seq_min=sequence.minimum,
        top=sum(p.minimum * p.multiplier for p in constants if p.multiplier > stamp.multiplier),
        fixed=sum(p.minimum * p.multiplier for p in constants),
    )


def _bits(multiplier: int) -> int:
    return multiplier.bit_length() - 1


# -- rendering ----------------------------------------------------------------------------------


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _int8(value: int) -> str:
    """A bigint constant as the parser makes it: an integer literal in int4's range is an int4,
    and its cast to bigint (the bitwise operators have no int4 twin) would be stored in the
    inlined hot path and run at every planning of a statement that inlines it."""
    return f"'{value}'::bigint"


# idfields.clock_us() and clock_ms() written in: a statement that inlines the hot path would
# read, decompress and parse a called function's stored body again at every planning.
_CLOCK_US = (
    "(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp())"
    " * '1000000'::double precision)::bigint"
)


def _clock(shape: _Shape) -> str:
    """The current tick as SQL: whole milliseconds where the layout allows, else microseconds."""
    if shape.epoch_us % 1000 == 0 and shape.unit_us % 1000 == 0:
        clock, epoch, unit = f"({_CLOCK_US} / 1000)", shape.epoch_us // 1000, shape.unit_us // 1000
    else:
        clock, epoch, unit = f"({_CLOCK_US})", shape.epoch_us, shape.unit_us
    if epoch:
        clock = f"({clock} {'-' if epoch > 0 else '+'} {abs(epoch)})"
    return clock if unit == 1 else f"({clock} / {unit})"


def _stamp(layout: Layout) -> PlacedField:
    return next(p for p in layout.placed if isinstance(p.spec, Timestamp))


def _field(layout: Layout, placed: PlacedField) -> str:
    """A field's value in ``id``: its bits, all the rest for the topmost field (as in Python)."""
    shift = _bits(placed.multiplier)
    value = f"(id >> {shift})" if shift else "id"
    return value if placed is layout.placed[0] else f"({value} & {placed.radix - 1})"


def _highest(layout: Layout, placed: PlacedField) -> int:
    """The largest value a field's bits can hold in a positive bigint."""
    top = placed is layout.placed[0]
    return _MAX_ID >> _bits(placed.multiplier) if top else placed.radix - 1


def _checks(layout: Layout) -> list[str]:
    """Layout.decode's in_layout as SQL, leaving out the tests a field's bits always pass."""
    checks = ["id > 0"] + ([f"id <= {layout.limit}"] if layout.limit < _MAX_ID else [])
    for placed in layout.placed:
        value = _field(layout, placed)
        if placed.minimum == placed.maximum:
            checks.append(f"{value} = {placed.minimum}")
            continue
        if placed.minimum > 0:
            checks.append(f"{value} >= {placed.minimum}")
        if placed.maximum < _highest(layout, placed):
            checks.append(f"{value} <= {placed.maximum}")
    return checks


def _time(layout: Layout, shape: _Shape, per_us: int) -> str:
    """Unix time of ``w.tick`` in ``per_us`` microseconds, NULL where a bigint cannot hold it."""
    epoch, unit = shape.epoch_us // per_us, shape.unit_us // per_us
    at = "w.tick" if unit == 1 else f"w.tick * {unit}"
    if epoch:
        at = f"{epoch} + {at}"
    lowest, highest = -((2**63 + epoch) // unit), (_MAX_ID - epoch) // unit
    stamp = _stamp(layout)
    first, last = (_SIGN, _MAX_ID) if shape.wraps else (0, _highest(layout, stamp))
    if lowest <= first and last <= highest:
        return at
    return (
        f"CASE WHEN w.tick BETWEEN {max(lowest, _SIGN)} AND {min(highest, _MAX_ID)} THEN {at} END"
    )


# -- the template -------------------------------------------------------------------------------

_MARKER = re.compile(r"^-- @@ (\w+)\n", re.MULTILINE)
_PLACEHOLDER = re.compile(r"@(\w+)@")


@cache
def _sections() -> dict[str, str]:
    """The sections of ``templates/layout.sql`` by name, each its text after its marker line."""
    text = resources.files(__package__).joinpath("templates", "layout.sql").read_text("utf-8")
    pieces = _MARKER.split(text)[1:]
    return dict(zip(pieces[::2], pieces[1::2], strict=True))


def _fill(section: str, **values: object) -> str:
    """A section with its ``@name@`` placeholders filled in; an expression section (one used
    inside another) is filled without its last newline."""
    text = _sections()[section]
    filled = _PLACEHOLDER.sub(lambda found: str(values[found.group(1)]), text)
    return filled if section in _STATEMENTS else filled.removesuffix("\n")


# Sections that are whole statements, ending with their newline; the others are expressions.
_STATEMENTS = frozenset(
    {
        "user_layout",
        "functions",
        "decoder",
        "decoder_at_clock",
        "drop_functions",
        "drop_decoder_at_reference",
        "drop_decoder",
    }
)


def _names(shape: _Shape) -> dict[str, str]:
    """The quoted names of a layout's functions, as the template's placeholders name them."""
    name = shape.name
    functions = {
        "issue": f"issue_{name}",
        "issue_at": f"issue_{name}_at",
        "issue_ranges": f"issue_{name}_ranges",
        "open": f"open_{name}",
        "window": f"window_{name}",
        "position": f"position_{name}",
        "hook": f"next_{name}_at",
        "hook_on": f"next_{name}_at_on",
        "next": f"next_{name}",
        "next_on": f"next_{name}_on",
        "take": f"take_{name}",
        "take_ranges": f"take_{name}_ranges",
    }
    return {key: _ident(value) for key, value in functions.items()}


def _render_functions(layout: Layout, shape: _Shape) -> tuple[str, str]:
    """(create SQL, drop SQL) of the issuers, the session's bindings, ``next_<name>_at(bigint)``
    (revoked from PUBLIC), ``next_<name>()`` and the bulk forms: everything of a layout but its
    decoder."""
    names, clock = _names(shape), _clock(shape)
    first, last = fence_nodes(shape.node_min, shape.node_max)
    fences = {
        "fence": fence_prefix(layout.lease_key),
        "fence_first": str(first),
        "fence_last": str(last),
    }
    create = _fill(
        "functions",
        **names,
        **fences,
        next_arguments=", ".join([*_internal_arguments(layout, shape, clock), str(shape.top)]),
        next_at_arguments=", ".join(
            [*_internal_arguments(layout, shape, f"COALESCE(now_tick, {clock})"), str(shape.top)]
        ),
        ranges_arguments=", ".join(_internal_arguments(layout, shape, "n")),
        layout=_literal(shape.name),
        position_name=_literal(f"pg_temp.{_ident('idfields_' + shape.name)}"),
        window_name=_literal(f"pg_temp.{_ident('idfields:' + shape.name)}"),
        hook_checked=_checked(shape, "now_tick"),
        next_checked=_checked(shape, clock),
    )
    return create, _fill("drop_functions", **names, **fences)


def _internal_arguments(layout: Layout, shape: _Shape, now: str) -> list[str]:
    """The internal functions' arguments: the geometry (an ``idfields.geometry``: name, lease
    key, then where the fields sit), ``now``, and the lease table the caller's search_path finds
    (an issuer's ``visible_lease``)."""
    geometry = ", ".join([_literal(shape.name), _literal(layout.lease_key), *_geometry(shape)])
    return [f"ROW({geometry})::idfields.geometry", now, "visible_lease"]


def _geometry(shape: _Shape) -> list[str]:
    """Where the layout's fields sit as SQL literals, in the order of ``idfields.geometry``."""
    values = [
        shape.epoch_us,
        shape.unit_us,
        shape.ts_bits,
        shape.ts_shift,
        str(shape.wraps).lower(),
        shape.node_shift,
        shape.node_min,
        shape.node_max,
        shape.seq_bits,
        shape.seq_min,
        shape.fixed,
        shape.max_ahead,
        shape.lease_ms,
    ]
    return [str(value) for value in values]


def _checked(shape: _Shape, now: str) -> str:
    """The hot path's next ID at the tick ``now``, or NULL where it is not the session's to
    issue (D9): the successor of the session's last ID (a carry out of the sequence goes on in
    the next tick) with the window's node and constants put in, not past the window's last ID,
    and, for a growing layout, moved up to the start of the tick ``now``; a wrapping layout's
    window is one tick, the clock's or the next, and the successor goes on inside it. NULL
    where the session's last ID is (int8larger() is strict, GREATEST() is not). Each value it
    reads is read again where it is used again, so none may change in between: the clock is
    read once."""
    s, period_mask = shape.ts_shift, (1 << shape.ts_bits) - 1
    middle_bits = ((1 << s) - 1) ^ shape.seq_mask
    middle, seq_min = _int8(middle_bits), _int8(shape.seq_min)
    successor = _fill("successor", middle=middle, not_middle=_int8(~middle_bits))
    if shape.wraps:
        return _fill(
            "wrapping_checked",
            successor=successor,
            ts_shift=s,
            now=now,
            period_mask=_int8(period_mask),
            not_low=_int8(~(middle_bits | shape.seq_mask)),
            seq_min=seq_min,
            middle=middle,
        )
    if shape.seq_min:  # a carry's next tick starts at the sequence's lowest value
        successor = (
            f"pg_catalog.int8larger({successor},\n            "
            f"({successor} & {_int8(~shape.seq_mask)}) | {seq_min})"
        )
    low = shape.top | shape.seq_min
    lowest = f"({now} << {s}) | {_int8(low)}" if low else f"({now} << {s})"
    return _fill("growing_checked", successor=successor, lowest=lowest, middle=middle)


def _render_decoder(layout: Layout, shape: _Shape) -> tuple[str, str]:
    """(create SQL, drop SQL) of decode_snowflake()'s twin or, for a wrapping timestamp,
    decode_traceid()'s: (id, reference) IMMUTABLE, and (id) reading the clock."""
    stamp = _stamp(layout)
    node, sequence = layout.node_fields[0], layout.placed[-1]
    # Whole milliseconds where the layout allows (like the clock), else microseconds.
    per_us = 1000 if shape.epoch_us % 1000 == 0 and shape.unit_us % 1000 == 0 else 1
    columns = {
        "decoder": _ident(f"decode_{shape.name}"),
        "stamp": _ident(stamp.name),
        "node": _ident(node.name),
        "sequence": _ident(sequence.name),
        "seq_type": "integer" if sequence.radix <= 2**31 else "bigint",
        "time_unit": "ms" if per_us == 1000 else "us",
    }
    # "time" adds whole days to a timestamp without time zone: exact (an interval times a
    # float is not, past 2**53) and free of the session's DST.
    create = _fill(
        "decoder",
        **columns,
        reference="reference timestamptz, " if shape.wraps else "",
        stamp_value=_field(layout, stamp),
        node_value=_field(layout, node),
        sequence_value=_field(layout, sequence),
        first_at=-(-_FIRST_US // per_us),
        last_at=_LAST_US // per_us,
        per_day=_DAY_US // per_us,
        unit_name="millisecond" if per_us == 1000 else "microsecond",
        checks="\n        AND ".join(_checks(layout)),
        at=_time(layout, shape, per_us),
        tick=_tick(layout, shape),
    )
    drop = _fill("drop_decoder", decoder=columns["decoder"])
    if not shape.wraps:
        return create, drop
    create += "\n" + _fill("decoder_at_clock", **columns)
    return create, _fill("drop_decoder_at_reference", decoder=columns["decoder"]) + drop


def _tick(layout: Layout, shape: _Shape) -> str:
    """The unwrapped tick as ``SELECT ... AS tick``: a wrapping one in the period nearest
    ``reference`` (Layout.decode's ``now + (tick - now + half) % radix - half``)."""
    raw = _field(layout, _stamp(layout))
    if not shape.wraps:
        return _fill("growing_tick", raw=raw)
    unit = shape.unit_us
    since = "(pg_catalog.extract('epoch', reference) * 1000000)::bigint"
    if shape.epoch_us:
        since += f" {'-' if shape.epoch_us > 0 else '+'} {abs(shape.epoch_us)}"
    now = f"SELECT {since} AS now"
    if unit != 1:  # floor division: a reference before the epoch has negative ticks
        floor = f"(u.us - ((u.us % {unit}) + {unit}) % {unit}) / {unit}"
        now = f"SELECT {floor} AS now FROM (SELECT {since} AS us) AS u"  # noqa: S608 (no input)
    # now % radix first: the sums stay below 3 * radix, whatever the reference.
    radix, half = 1 << shape.ts_bits, 1 << (shape.ts_bits - 1)
    return _fill("wrapping_tick", raw=raw, radix=radix, half=half, now=now)
