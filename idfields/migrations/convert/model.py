"""What a conversion plan is made from (the introspected key) and what it is made of (statements).

Plain data, so a plan is a pure function of it and every dialect's planner can be unit-tested
without a server; introspection (``introspect.py``) or the caller (offline Alembic) fills it in.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Literal

from idfields._generation import Generation, database_functions
from idfields.errors import InvalidArgument, LayoutError
from idfields.layouts import Layout, Timestamp, get_layout
from idfields.migrations.convert.quoting import Dialect, check_dialect
from idfields.sql.catalog import functions_of

# Implementation of the planner: nothing here is API.
__all__: list[str] = []

KeyKind = Literal["serial", "identity", "auto_increment", "none"]
KEY_KINDS: tuple[KeyKind, ...] = ("serial", "identity", "auto_increment", "none")
INTEGER_TYPES = ("smallint", "integer", "bigint")

# New IDs must exceed max(id) even from a host whose clock is this far behind.
CLOCK_SLACK_NS = 86_400 * 10**9

_LOCK_TIMEOUT = re.compile(r"(\d+)(ms|s|min)?")


@dataclass(frozen=True)
class Reference:
    """A foreign-key column that points at the key (M2M through tables included)."""

    schema: str | None
    table: str
    column: str
    constraint: str
    data_type: str = "integer"
    nullable: bool = False
    unsigned: bool = False
    # ON DELETE / ON UPDATE / DEFERRABLE clauses (fixed keywords), for re-adding the constraint.
    actions: str = ""
    # MariaDB/MySQL: dropped by a run that failed; known from its record only, re-added by a rerun.
    recorded: bool = False


@dataclass(frozen=True)
class IdColumn:
    """An integer column that holds the key's IDs without a foreign key (a GenericForeignKey's
    ``object_id``, an Alembic ``also=[...]``): widened to bigint with the key."""

    schema: str | None
    table: str
    column: str
    data_type: str = "integer"
    nullable: bool = False
    unsigned: bool = False


@dataclass(frozen=True)
class Index:
    """A plain-column index touching a converted column (re-created by the online path)."""

    name: str
    columns: tuple[str, ...]
    unique: bool
    # True when the index backs a UNIQUE constraint (M2M through tables): re-added as one.
    constraint: bool = False
    # True when it backs a referencing table's PRIMARY KEY (M2M, multi-table inheritance).
    primary: bool = False


@dataclass(frozen=True)
class KeyInfo:
    """The key column as introspection sees it (or as an offline caller asserts it)."""

    dialect: Dialect
    schema: str | None
    table: str
    column: str = "id"
    data_type: str = "integer"
    kind: KeyKind = "serial"
    # serial: the sequence behind the default; identity: the identity's own sequence.
    sequence: str | None = None
    sequence_schema: str | None = None
    identity_always: bool = False
    unsigned: bool = False
    primary_key: str | None = None
    references: tuple[Reference, ...] = ()
    # None when unknown (offline): the plan then guards in SQL where the dialect can.
    max_id: int | None = None
    # Online path only: indexes (other than the key's primary key) per table that use a
    # converted column, and what the online path cannot carry over (it refuses to start).
    indexes: dict[str, tuple[Index, ...]] = field(default_factory=dict)
    online_blockers: tuple[str, ...] = ()
    # Columns to widen with the key that no constraint ties to it (only those not bigint yet).
    also: tuple[IdColumn, ...] = ()

    @property
    def id_columns(self) -> tuple[Reference | IdColumn, ...]:
        """Every column besides the key that holds its IDs: the references, then ``also``."""
        return (*self.references, *self.also)

    def __post_init__(self) -> None:
        check_dialect(self.dialect)
        if self.kind not in KEY_KINDS:
            raise InvalidArgument(f"key kind {self.kind!r} is unknown; use one of {KEY_KINDS}")
        for data_type in (self.data_type, *(ref.data_type for ref in self.references)):
            if data_type not in INTEGER_TYPES:
                raise InvalidArgument(
                    f"column type {data_type!r} cannot hold k-sorted IDs; only integer keys "
                    f"({', '.join(INTEGER_TYPES)}) are converted"
                )
        if self.kind == "serial" and self.sequence is None:
            raise InvalidArgument(
                f"{self.table}.{self.column} is serial but no sequence was given; pass its name"
            )


@dataclass(frozen=True)
class Statement:
    """One SQL statement with what it costs: the lock it takes and whether it rewrites a table.

    ``transaction=False`` marks statements that must run outside a transaction block
    (``CREATE INDEX CONCURRENTLY``).
    """

    sql: str
    lock: str
    rewrites: bool = False
    note: str = ""
    transaction: bool = True

    def annotated(self) -> str:
        """The SQL preceded by a comment saying its cost (shown by sqlmigrate and ``--sql``)."""
        cost = self.lock + (", rewrites the table" if self.rewrites else "")
        comment = f"-- {cost}" + (f": {self.note}" if self.note else "")
        return f"{comment}\n{self.sql}"


@dataclass(frozen=True)
class Target:
    """Where the key goes: the layout of its new IDs, who makes them, how long to wait for locks."""

    layout: Layout
    generation: Generation = "app"
    lock_timeout: str = "5s"

    @classmethod
    def of(cls, layout: str | Layout, generation: str = "app", lock_timeout: str = "5s") -> Target:
        """Validate an operation's arguments; every refusal says why and what to do."""
        resolved = get_layout(layout)
        check_layout(resolved)
        functions = database_functions(resolved, generation)
        lock_timeout_ms(lock_timeout)
        return cls(resolved, "app" if functions is None else "db", lock_timeout)

    @property
    def db_default(self) -> str:
        return functions_of(self.layout).next_call

    def first_id(self, now_ns: int | None = None, slack_ns: int = CLOCK_SLACK_NS) -> int:
        """The smallest ID the layout can issue from ``now_ns`` less ``slack_ns`` on."""
        now = time.time_ns() if now_ns is None else now_ns
        return self.layout.first_id_at(now - slack_ns)

    def check_max_id(self, key: KeyInfo, now_ns: int | None = None) -> None:
        """Refuse when an existing row's ID is not below every ID the layout will issue."""
        self.id_floor(key, now_ns)

    def id_floor(self, key: KeyInfo, now_ns: int | None = None) -> int:
        """The bound every existing ID must stay below (the plan's run-time guard checks it
        again under the lock); raises :class:`LayoutError` when ``key.max_id`` is not below it.

        It is the layout's first ID a day back (:data:`CLOCK_SLACK_NS`), unless max(id) is an ID
        of this layout issued before now: a table converted, restored to AUTO_INCREMENT and
        converted again holds the layout's own IDs (and the counter's values right above them),
        all below the layout's IDs of this very tick, the bound then.
        """
        now = time.time_ns() if now_ns is None else now_ns
        first = self.first_id(now)
        if key.max_id is None or key.max_id < first:
            return first
        decoded = self.layout.decode(key.max_id, reference_ns=now)
        name, where = self.layout.name, f"{key.table}.{key.column}"
        if decoded.in_layout and decoded.time_ns is not None and decoded.time_ns <= now:
            return self.first_id(now, slack_ns=0)
        if decoded.in_layout and decoded.time is not None:
            raise LayoutError(
                f"{where} holds IDs up to {key.max_id}, which as {name!r} IDs are from "
                f"{decoded.time.isoformat()}, after this host's clock: new IDs could repeat or "
                "sort before existing ones. If they are this layout's IDs from a host whose "
                "clock runs ahead, correct that clock and convert once this host's clock has "
                "passed that time; if the table's keys come from elsewhere, choose a layout "
                "whose IDs start above max(id) (a later epoch or a wider timestamp)"
            )
        raise LayoutError(
            f"{where} holds IDs up to {key.max_id}, which are not {name!r} IDs (a field is out "
            f"of range) and not below {first}, the first ID it may issue: new IDs could repeat "
            "or sort before existing ones. Choose a layout whose IDs start above max(id) "
            "(a later epoch or a wider timestamp)"
        )


def check_layout(layout: Layout) -> None:
    """Refuse a layout whose new IDs are not all greater than today's, forever.

    Only a leading, non-wrapping timestamp promises that. DecimalId leads with a counter that
    restarts at 1 for every generator id, and TraceId's timestamp wraps every ~388 days; both
    would issue IDs below (or equal to) rows the table already has.
    """
    first = layout.placed[0].spec
    if not isinstance(first, Timestamp):
        raise LayoutError(
            f"layout {layout.name!r} cannot take over an AUTO_INCREMENT key: its IDs lead with "
            f"{first.name!r}, not time, so new IDs are not guaranteed to exceed max(id) and "
            "could repeat existing ones. Use a time-leading layout such as 'snowflake'"
        )
    if first.wraps:
        raise LayoutError(
            f"layout {layout.name!r} cannot take over an AUTO_INCREMENT key: its timestamp wraps "
            f"({layout.runs_out_text}), so after a wrap new IDs fall below max(id) and could "
            "repeat existing ones. Use a non-wrapping layout such as 'snowflake'"
        )


def lock_timeout_ms(value: str) -> int:
    """Parse ``"5s"``, ``"500ms"``, ``"1min"`` or ``"5000"`` (ms) into milliseconds."""
    match = _LOCK_TIMEOUT.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise InvalidArgument(
            f"lock_timeout={value!r} is not a duration; write e.g. '5s', '500ms' or '1min'"
        )
    scale = {None: 1, "ms": 1, "s": 1000, "min": 60_000}[match.group(2)]
    milliseconds = int(match.group(1)) * scale
    if milliseconds <= 0:
        raise InvalidArgument("lock_timeout must be positive: 0 would wait forever for a lock")
    return milliseconds
