"""Database-side ID functions of a time-based layout: ``idfields.next_<name>()``, its test hook
``idfields.next_<name>_at(now_tick bigint)``, the bulk forms ``idfields.take_<name>(n)`` and
``take_<name>_ranges(n)``, what they run as the owner (``issue_<name>...``), and for user layouts
``idfields.decode_<name>(id[, reference])``. The built-in snowflake and traceid functions are
rendered here too (:func:`render_builtin_functions`, written into the functions' SQL where it
says ``@builtin_layouts@``); their decoders are the SQL file's own.

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

The SQL depends only on the layout's data (golden files in ``tests/pg/golden/`` hold it for
sample layouts). A migration operation stores the SQL it installs, as Django's writer writes it,
so a migration replays the same way under any later release (:func:`layout_scripts`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
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
    create = (
        f"-- idfields: ID functions of layout {shape.name}, from idfields.sql.layouts.\n"
        f"{_PIN}\n{functions}{decoder}\n{_UNPIN}"
    )
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


# idfields.clock_us() and clock_ms() written in: a statement that inlines the hot path would
# read, decompress and parse a called function's stored body again at every planning.
_CLOCK_US = "(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint"


def _clock(shape: _Shape) -> str:
    """The current tick as SQL: whole milliseconds where the layout allows, else microseconds."""
    if shape.epoch_us % 1000 == 0 and shape.unit_us % 1000 == 0:
        clock, epoch, unit = f"({_CLOCK_US} / 1000)", shape.epoch_us // 1000, shape.unit_us // 1000
    else:
        clock, epoch, unit = f"({_CLOCK_US})", shape.epoch_us, shape.unit_us
    if epoch:
        clock = f"({clock} {'-' if epoch > 0 else '+'} {abs(epoch)})"
    return clock if unit == 1 else f"({clock} / {unit})"


def _sequence(shape: _Shape) -> str:
    """This backend's temporary sequence, found through the transaction-local setting."""
    setting = _literal(f"idfields.{shape.name}")
    return f"NULLIF(pg_catalog.current_setting({setting}, true), '')::oid::regclass"


def _geometry(shape: _Shape) -> list[str]:
    """The layout's geometry as SQL literals, in the order every slow-path signature takes it."""
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


def _render_decoder(layout: Layout, shape: _Shape) -> tuple[str, str]:
    """(create SQL, drop SQL) of decode_snowflake()'s twin or, for a wrapping timestamp,
    decode_traceid()'s: (id, reference) IMMUTABLE, and (id) reading the clock."""
    stamp = _stamp(layout)
    node, sequence = layout.node_fields[0], layout.placed[-1]
    decoder = _ident(f"decode_{shape.name}")
    # Whole milliseconds where the layout allows (like the clock), else microseconds.
    per_us = 1000 if shape.epoch_us % 1000 == 0 and shape.unit_us % 1000 == 0 else 1
    per_day, unit_name = _DAY_US // per_us, "millisecond" if per_us == 1000 else "microsecond"
    checks = "\n        AND ".join(_checks(layout))
    seq_type = "integer" if sequence.radix <= 2**31 else "bigint"
    columns = (
        f"OUT {_ident(stamp.name)} bigint, OUT {_ident(node.name)} integer, "
        f"OUT {_ident(sequence.name)} {seq_type},\n"
        f'    OUT time_{"ms" if per_us == 1000 else "us"} bigint, OUT "time" timestamptz, '
        f"OUT in_layout boolean"
    )
    # "time" adds whole days to a timestamp without time zone: exact (an interval times a
    # float is not, past 2**53) and free of the session's DST.
    body = f"""    SELECT {_field(layout, stamp)}, {_field(layout, node)}::integer,
        {_field(layout, sequence)}::{seq_type}, t.at,
        CASE WHEN t.at BETWEEN {-(-_FIRST_US // per_us)} AND {_LAST_US // per_us}
            THEN pg_catalog.timezone('UTC', timestamp '1970-01-01 00:00:00'
                + (t.at / {per_day}) * interval '1 day'
                + (t.at % {per_day}) * interval '1 {unit_name}') END,
        {checks}
    FROM (SELECT {_time(layout, shape, per_us)} AS at
          FROM ({_tick(layout, shape)}) AS w) AS t"""  # noqa: S608 (no input)
    plain = f"CREATE OR REPLACE FUNCTION idfields.{decoder}(\n    id bigint, {columns}\n)\n"
    full = f"BEGIN ATOMIC\n{body};\nEND;\n"
    if not shape.wraps:
        create = f"{plain}LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE\n{full}"
        return create, f"DROP FUNCTION IF EXISTS idfields.{decoder}(bigint);\n"
    now_reference = f"SELECT * FROM idfields.{decoder}(id, pg_catalog.clock_timestamp())"  # noqa: S608 (a quoted name)
    short = f"BEGIN ATOMIC\n    {now_reference};\nEND;\n"
    create = (
        f"CREATE OR REPLACE FUNCTION idfields.{decoder}(\n"
        f"    id bigint, reference timestamptz, {columns}\n)\n"
        f"LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE\n{full}\n"
        f"{plain}LANGUAGE sql VOLATILE STRICT PARALLEL SAFE\n{short}"
    )
    drop = (
        f"DROP FUNCTION IF EXISTS idfields.{decoder}(bigint, timestamptz);\n"
        f"DROP FUNCTION IF EXISTS idfields.{decoder}(bigint);\n"
    )
    return create, drop


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


def _tick(layout: Layout, shape: _Shape) -> str:
    """The unwrapped tick as ``SELECT ... AS tick``: a wrapping one in the period nearest
    ``reference`` (Layout.decode's ``now + (tick - now + half) % radix - half``)."""
    stamp = _stamp(layout)
    raw = _field(layout, stamp)
    if not shape.wraps:
        return f"SELECT {raw} AS tick"
    radix, half, unit = 1 << shape.ts_bits, 1 << (shape.ts_bits - 1), shape.unit_us
    since = "(pg_catalog.extract('epoch', reference) * 1000000)::bigint"
    if shape.epoch_us:
        since += f" {'-' if shape.epoch_us > 0 else '+'} {abs(shape.epoch_us)}"
    now = f"SELECT {since} AS now"
    if unit != 1:  # floor division: a reference before the epoch has negative ticks
        floor = f"(u.us - ((u.us % {unit}) + {unit}) % {unit}) / {unit}"
        now = f"SELECT {floor} AS now FROM (SELECT {since} AS us) AS u"  # noqa: S608 (no input)
    # now % radix first: the sums stay below 3 * radix, whatever the reference.
    nearest = f"((({raw} - r.now % {radix} + {half}) % {radix}) + {radix}) % {radix} - {half}"
    return f"SELECT r.now + {nearest} AS tick\n                FROM ({now}) AS r"  # noqa: S608 (no input)


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


# -- the functions' parts ------------------------------------------------------------------------

_PIN = (
    "SELECT pg_catalog.set_config('idfields.install_search_path',\n"
    "    pg_catalog.current_setting('search_path'), true);\n"
    "SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);\n"
)
_UNPIN = (
    "SELECT pg_catalog.set_config('search_path',\n"
    "    pg_catalog.current_setting('idfields.install_search_path'), true);\n"
)
# An issuer's clauses: it runs as the owner, under a pinned search_path (pg_temp last).
_ISSUER = (
    "LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE {extra}SECURITY DEFINER\n"
    "SET search_path = pg_catalog, pg_temp\n"
    "AS $$\n"
)
# The lease table the caller's search_path finds, as the inlined SQL hands it to the issuer.
_VISIBLE_LEASE = "pg_catalog.to_regclass('idfields_node_lease')"


def _render_take(shape: _Shape) -> tuple[str, str]:
    """(create SQL, drop SQL) of ``idfields.take_<name>(n)`` and ``take_<name>_ranges(n)``
    (one (first_id, last_id) row per tick, for the INSERT to expand): inlined SQL over
    ``issue_<name>_ranges()``, handing it the lease table the caller's search_path finds."""
    take, ranges = _ident(f"take_{shape.name}"), _ident(f"take_{shape.name}_ranges")
    issued = f"idfields.{_ident(f'issue_{shape.name}_ranges')}(n, {_VISIBLE_LEASE}) AS r"
    create = (
        f"CREATE OR REPLACE FUNCTION idfields.{take}(n bigint) RETURNS SETOF bigint\n"  # noqa: S608 (quoted names)
        f"LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 1000\n"
        f"BEGIN ATOMIC\n    SELECT pg_catalog.generate_series(r.first_id, r.last_id)\n"
        f"    FROM {issued};\nEND;\n\n"
        f"CREATE OR REPLACE FUNCTION idfields.{ranges}(\n"
        f"    n bigint, OUT first_id bigint, OUT last_id bigint\n) RETURNS SETOF record\n"
        f"LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 250\n"
        f"BEGIN ATOMIC\n    SELECT r.first_id, r.last_id\n    FROM {issued};\nEND;\n\n"
    )
    drop = (
        f"DROP FUNCTION IF EXISTS idfields.{ranges}(bigint);\n"
        f"DROP FUNCTION IF EXISTS idfields.{take}(bigint);\n"
    )
    return create, drop


def _internal_arguments(layout: Layout, shape: _Shape, now: str) -> list[str]:
    """The internal functions' arguments: name, lease key, ``now``, the geometry, and the lease
    table the caller's search_path finds (an issuer's ``visible_lease``)."""
    return [
        _literal(shape.name),
        _literal(layout.lease_key),
        now,
        *_geometry(shape),
        "visible_lease",
    ]


def _render_functions(layout: Layout, shape: _Shape) -> tuple[str, str]:
    """(create SQL, drop SQL) of the issuers, ``next_<name>_at(bigint)`` (revoked from
    PUBLIC), ``next_<name>()`` and the bulk forms: everything of a layout but its decoder."""
    render = _render_wrapping if shape.wraps else _render_growing
    function, hook = _ident(f"next_{shape.name}"), _ident(f"next_{shape.name}_at")
    issuers, drop_issuers = _render_issuers(layout, shape)
    take, drop_take = _render_take(shape)
    create = (
        f"{issuers}"
        f"CREATE OR REPLACE FUNCTION idfields.{hook}(now_tick bigint) RETURNS bigint\n"
        f"LANGUAGE sql VOLATILE PARALLEL UNSAFE\n"
        f"BEGIN ATOMIC\n{render(shape, 'now_tick')};\nEND;\n"
        f"REVOKE ALL ON FUNCTION idfields.{hook}(bigint) FROM PUBLIC;\n\n"
        f"CREATE OR REPLACE FUNCTION idfields.{function}() RETURNS bigint\n"
        f"LANGUAGE sql VOLATILE PARALLEL UNSAFE\n"
        f"BEGIN ATOMIC\n{render(shape, _clock(shape))};\nEND;\n\n"
        f"{take}"
    )
    drop = (
        f"{drop_take}"
        f"DROP FUNCTION IF EXISTS idfields.{function}();\n"
        f"DROP FUNCTION IF EXISTS idfields.{hook}(bigint);\n"
        f"{drop_issuers}"
    )
    return create, drop


def _render_issuers(layout: Layout, shape: _Shape) -> tuple[str, str]:
    """(create SQL, drop SQL) of what the public functions run as the owner (SECURITY
    DEFINER), the layout's geometry written in: ``issue_<name>(visible_lease)`` (the clock's
    tick), ``issue_<name>_at(now_tick, visible_lease)`` (the test hook's, revoked from PUBLIC)
    and ``issue_<name>_ranges(n, visible_lease)``. The first two hold the same body, the tick
    aside: one PL/pgSQL call a transaction (a call of one from the other would cost the
    plain one a second call and its SET clause)."""
    name = shape.name
    issue, at = _ident(f"issue_{name}"), _ident(f"issue_{name}_at")
    ranges = _ident(f"issue_{name}_ranges")
    clock = _clock(shape)
    taken = ", ".join(_internal_arguments(layout, shape, "n"))
    create = (
        f"CREATE OR REPLACE FUNCTION idfields.{issue}(visible_lease regclass) RETURNS bigint\n"  # noqa: S608 (quoted names, literals)
        f"{_ISSUER.format(extra='COST 1 ')}"
        f"{_first_id(layout, shape, clock)}\n"
        f"CREATE OR REPLACE FUNCTION idfields.{at}(now_tick bigint, visible_lease regclass)\n"
        f"RETURNS bigint\n"
        f"{_ISSUER.format(extra='COST 1 ')}"
        f"{_first_id(layout, shape, f'COALESCE(now_tick, {clock})')}"
        f"REVOKE ALL ON FUNCTION idfields.{at}(bigint, regclass) FROM PUBLIC;\n\n"
        f"CREATE OR REPLACE FUNCTION idfields.{ranges}(\n"
        f"    n bigint, visible_lease regclass, OUT first_id bigint, OUT last_id bigint\n"
        f") RETURNS SETOF record\n"
        f"{_ISSUER.format(extra='ROWS 250 ')}"
        f"BEGIN\n    RETURN QUERY SELECT r.first_id, r.last_id\n"
        f"    FROM idfields.take_id_ranges({taken}) AS r;\nEND\n$$;\n\n"
    )
    drop = (
        f"DROP FUNCTION IF EXISTS idfields.{ranges}(bigint, regclass);\n"
        f"DROP FUNCTION IF EXISTS idfields.{at}(bigint, regclass);\n"
        f"DROP FUNCTION IF EXISTS idfields.{issue}(regclass);\n"
    )
    return create, drop


def _hot_path(shape: _Shape, now: str, test: str) -> str:
    """Only the common case inline (the candidate passes ``test``, written over
    ``{candidate}``), so a statement plans and sets up as few nodes as can be; the rest is one
    call of the layout's issuer: ``issue_<name>()``, or the test hook's ``issue_<name>_at()``."""
    sequence = _sequence(shape)
    candidate = f"pg_catalog.currval({sequence}) + 1"
    if now == "now_tick":
        rest = f"idfields.{_ident(f'issue_{shape.name}_at')}(now_tick, {_VISIBLE_LEASE})"
    else:
        rest = f"idfields.{_ident(f'issue_{shape.name}')}({_VISIBLE_LEASE})"
    return f"""    SELECT CASE
        WHEN {test.format(candidate=candidate)}
        THEN pg_catalog.setval({sequence}, {candidate})
        ELSE {rest}
    END"""


def _first_id(layout: Layout, shape: _Shape, tick: str) -> str:
    """An issuer's body, ``tick`` the tick it issues at: the first ID of a transaction and an
    ID in a new tick in one step, the geometry as literals; anything else is time_next(). The
    claim is 'node:acquired:promise:sequence OID:holder:lease table OID', the limit the last
    tick the lease covers. PL/pgSQL sets up every expression it evaluates again in each
    transaction, at a cost that grows with the expression's function and operator nodes: few
    expressions, each value computed once."""
    s, name = shape.ts_shift, shape.name
    low = shape.fixed | shape.seq_min
    base = f"NULLIF({_field_of_claim(1)}, '')::bigint << {shape.node_shift}"
    base += f" | {low}" if low else ""
    # the bits of an ID outside its timestamp and sequence (node, constants, sign) are base's
    others = ~((((1 << shape.ts_bits) - 1) << s) | shape.seq_mask)
    rest = [*_internal_arguments(layout, shape, "tick"), str(shape.top)]
    setting = f"idfields.{name}"
    sequence, lease = _field_of_claim(4), _field_of_claim(6)
    own = _literal(f"pg_temp.idfields_{name}")
    limit = f"NULLIF(pg_catalog.current_setting({_literal(setting + '_limit')}, true), '')::bigint"
    if shape.wraps:
        # Each new tick of a wrapping layout takes the slow path (its fence covers one tick):
        # the next ID goes on in the last ID's tick, as the hot path's test says.
        next_id = "last + 1"
        test = f"""(last # base) & {others} = 0
        AND tick <= {limit}
        AND {_wrapping_test(shape, "tick").format(candidate="next_id")}"""
    else:
        next_id = f"GREATEST(last + 1, (tick << {s}) | base)"
        tick_of = f"next_id >> {s}"
        if shape.top:
            tick_of = f"({tick_of}) & {(1 << shape.ts_bits) - 1}"
        test = f"""((last # base) | (next_id # base)) & {others} = 0
        AND {tick_of} <= tick + {shape.max_ahead}
        AND {tick_of} <= {limit}"""
    return f"""DECLARE
    claim text := pg_catalog.current_setting({_literal(setting + "_lease")}, true);
    tick bigint := {tick};
    -- The last ID of the claim's sequence, while it is this session's own, as the catalog
    -- says (a setting naming another was written by hand: D4), and the switch is set (a new
    -- tick) or, for the transaction's first ID, the transaction may write and the caller finds
    -- the claim's lease table.
    last bigint := pg_catalog.pg_sequence_last_value(CASE
        WHEN {sequence} = pg_catalog.to_regclass({own})::oid::text
            AND (pg_catalog.current_setting({_literal(setting)}, true) <> ''
            OR {lease} = COALESCE(visible_lease::oid::text, {lease})
            AND pg_catalog.current_setting('transaction_read_only') = 'off')
        THEN NULLIF({sequence}, '')::oid END);
    base bigint := {base};
    next_id bigint := {next_id};
BEGIN
    -- A NULL anywhere (no claim, no sequence, no last ID, no limit) fails: the generic path.
    -- The last ID and the next are on the claim's node: a claim this backend did not make
    -- (a setting written by hand) names another node and goes to the slow path, which claims.
    -- The switch is set with the ID (time_next() trusts a set switch).
    IF {test}
    THEN
        RETURN pg_catalog.setval(
            pg_catalog.set_config({_literal(setting)}, {sequence}, true)::oid, next_id);
    END IF;
    RETURN idfields.time_next(
        {", ".join(rest)});
END
$$;
"""


def _field_of_claim(index: int) -> str:
    """A field of the claim setting 'node:acquired:promise:sequence OID:holder:lease table OID',
    '' where it has none (split_part(): no array to build and subscript)."""
    return f"pg_catalog.split_part(claim, ':', {index})"


def _with_top(shape: _Shape, bits: str) -> str:
    return f"({bits} | {shape.top})" if shape.top else bits


def _growing_test(shape: _Shape, now: str) -> str:
    """next_snowflake()'s test over ``{candidate}``: not behind the tick of ``now``, and its
    sequence bits did not carry."""
    s = shape.ts_shift
    window = f"{_with_top(shape, f'({now} << {s})')}) & {_SIGN | shape.seq_mask}) > 0"
    return f"(({{candidate}} - {window}"


def _wrapping_test(shape: _Shape, now: str) -> str:
    """next_traceid()'s test over ``{candidate}``: its tick is now or now + 1 modulo the period
    (bits above the lowest tick bit of the difference are zero) and its sequence did not
    carry."""
    s, period_mask = shape.ts_shift, (1 << shape.ts_bits) - 1
    kept = ((period_mask - 1) << s) | shape.seq_mask
    window = (
        f"{_with_top(shape, f'(({now} & {period_mask}) << {s})')}) & {kept}) - 1)\n"
        f"            & {-(1 << shape.seq_bits)}) = 0"
    )
    return f"(((({{candidate}} - {window}"


def _render_growing(shape: _Shape, now: str) -> str:
    return _hot_path(shape, now, _growing_test(shape, now))


def _render_wrapping(shape: _Shape, now: str) -> str:
    return _hot_path(shape, now, _wrapping_test(shape, now))
