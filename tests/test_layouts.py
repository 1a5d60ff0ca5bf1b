"""Layouts: the references' numbers, validation messages, and compose/decode as properties."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from idfields import LayoutError, ValueOutOfRange
from idfields.layouts import (
    BUILTIN_LAYOUTS,
    CHRONICLE,
    DECIMAL,
    GLOBALID,
    MAX_ID,
    MAX_JS_SAFE_ID,
    RUNID,
    SNOWFLAKE,
    SNOWFLAKE_JS,
    TRACEID,
    Constant,
    Layout,
    Node,
    Sequence,
    Timestamp,
    get_layout,
)


def field_values(layout: Layout) -> st.SearchStrategy[dict[str, int]]:
    """Any in-range value for every field (constants at their value), never the all-zero ID."""
    parts = {placed.name: st.integers(placed.minimum, placed.maximum) for placed in layout.placed}
    return st.fixed_dictionaries(parts).filter(
        lambda values: any(values[p.name] * p.multiplier for p in layout.placed)
    )


@pytest.mark.parametrize("name", sorted(BUILTIN_LAYOUTS))
def test_compose_decode_round_trip(name: str) -> None:
    layout = BUILTIN_LAYOUTS[name]

    @given(field_values(layout))
    def check(values: dict[str, int]) -> None:
        value = layout.compose(values)
        assert 1 <= value <= layout.limit
        decoded = layout.decode(value)
        assert decoded.values == values
        assert decoded.in_layout

    check()


@pytest.mark.parametrize("name", ["snowflake", "traceid", "chronicle", "snowflake_js"])
def test_id_order_follows_time_order(name: str) -> None:
    layout = BUILTIN_LAYOUTS[name]
    stamp = layout.timestamp
    assert stamp is not None

    @given(field_values(layout), field_values(layout))
    def check(first: dict[str, int], second: dict[str, int]) -> None:
        if first[stamp.name] != second[stamp.name]:
            earlier, later = sorted((first, second), key=lambda v: v[stamp.name])
            assert layout.compose(earlier) < layout.compose(later)

    check()


def test_decimal_id_of_the_document() -> None:
    decoded = DECIMAL.decode(14150009200065)
    assert decoded.values == {"counter": 1415, "generator_id": 92, "launch_id": 65}
    assert DECIMAL.compose(counter=1415, generator_id=92, launch_id=65) == 14150009200065


def test_largest_decimal_id_and_the_counter_decrement() -> None:
    largest = 922_337_203_68_547_75_807
    assert largest == MAX_ID
    decoded = DECIMAL.decode(largest)
    assert decoded.values == {"counter": 922_337_203, "generator_id": 68_547, "launch_id": 75_807}
    assert not decoded.in_layout  # the counter stops at 922_337_202 ...
    assert DECIMAL["counter"].maximum == 922_337_202
    top = DECIMAL.compose(counter=922_337_202, generator_id=99_999, launch_id=99_999)
    assert top == DECIMAL.max_id <= MAX_ID  # ... so generator_id keeps its full 0..99_999
    with pytest.raises(ValueOutOfRange, match="counter"):
        DECIMAL.compose(counter=922_337_203, generator_id=0, launch_id=1)


def test_snowflake_lasts_69_years_at_4096_per_ms() -> None:
    assert SNOWFLAKE.ids_per_second == 4_096_000
    assert SNOWFLAKE.node_count == 1024
    years = (SNOWFLAKE.runs_out - SNOWFLAKE["timestamp"].spec.epoch) / timedelta(days=365.2425)  # type: ignore[operator, union-attr]
    assert 69.6 < years < 69.8


def test_traceid_wraps_every_2_to_the_25_seconds() -> None:
    assert TRACEID.period_seconds == 2**25
    assert 388 < 2**25 / 86_400 < 389
    assert TRACEID.runs_out is None and "388" in TRACEID.runs_out_text
    # A tick past the wrap composes like the tick 2**25 seconds earlier ...
    assert TRACEID.compose(timestamp=2**25 + 7, node_no=1, counter=1) == TRACEID.compose(
        timestamp=7, node_no=1, counter=1
    )
    # ... and decodes to the latest time with that remainder before the reference.
    now_ns = 2**25 * 10**9 * 53 + 5 * 10**9
    decoded = TRACEID.decode(
        TRACEID.compose(timestamp=3, node_no=1, counter=1), reference_ns=now_ns
    )
    assert decoded.time_ns == 2**25 * 10**9 * 53 + 3 * 10**9
    assert TRACEID["counter"].minimum == 1  # keeps every ID >= 1


def test_globalid_fits_63_bits_and_reports_its_lifetime() -> None:
    assert [p.spec.width for p in GLOBALID.placed] == [10, 46, 7]
    assert GLOBALID.max_id == MAX_ID
    assert GLOBALID.runs_out is not None and GLOBALID.runs_out.year == 4199
    assert GLOBALID.ids_per_second == 128_000


def test_chronicle_reads_as_a_nanosecond_timestamp_with_the_host() -> None:
    moment = datetime(2021, 12, 28, 14, 7, 2, 954100, tzinfo=UTC)
    ticks = (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 10 + 1
    value = CHRONICLE.compose(timestamp=ticks, host=28)
    assert str(value).endswith("954100128")  # 2021-12-28T14:07:02.954100128 for host 28
    assert CHRONICLE.decode(value).time == moment
    assert CHRONICLE.runs_out is not None and CHRONICLE.runs_out.date().isoformat() == "2262-04-11"
    assert CHRONICLE.ids_per_second == 10_000_000


def test_runid_example_of_the_chibrary_post() -> None:
    value = RUNID.compose(version=0, run=8452, sequence=11827)
    assert format(value, "047b") == "00000000000000000001000010000010010111000110011"
    assert RUNID.max_id < 2**47


def test_chibrary_old_scheme_as_a_user_layout() -> None:
    old = Layout("chibrary_v1", [Node(4, name="server"), Node(16, name="pid"), Sequence(20)])
    value = old.compose(server=2, pid=14013, sequence=983)
    assert format(value, "040b") == "0010" + format(14013, "016b") + format(983, "020b")
    # Harkins' post prints this bit string for server 2, pid 14013, sequence 983; its middle 16 bits
    # are 1268, not 14013 (a slip in the post), while server and sequence decode as written.
    printed = old.decode(int("0010000001001111010000000000001111010111", 2)).values
    assert printed == {"server": 2, "pid": 1268, "sequence": 983}


def test_js_safe_layout_stays_below_2_to_the_53() -> None:
    assert SNOWFLAKE_JS.max_id == MAX_JS_SAFE_ID
    with pytest.raises(LayoutError, match=r"2\*\*53-1"):
        Layout("wide", [Timestamp(41), Node(10), Sequence(12)], js_safe=True)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ([Timestamp(42), Node(10), Sequence(12)], r"exceeds 2\*\*63-1.*maximum="),
        ([Timestamp(41), Node(0), Sequence(12)], "field 'node' has width 0"),
        ([Timestamp(41, epoch=datetime(2999, 1, 1, tzinfo=UTC)), Sequence(12)], "in the future"),
        ([Timestamp(41, epoch=datetime(2000, 1, 1)), Sequence(12)], "no time zone"),
        ([Timestamp(41, unit="fortnight"), Sequence(12)], "unit 'fortnight'"),
        ([Sequence(12), Timestamp(41)], "Sequence comes before the Timestamp"),
        ([Sequence(12), Constant(3)], "needs a Node"),
        ([Node(10), Node(12, name="shard")], "neither a Timestamp nor a Sequence"),
        ([Timestamp(30), Node(10, maximum=2000)], "does not fit 10 bits"),
        ([Timestamp(30), Node(10, name="x"), Sequence(3, name="x")], "used twice"),
    ],
)
def test_invalid_layouts_fail_at_construction(fields: list[object], message: str) -> None:
    with pytest.raises(LayoutError, match=message):
        Layout("bad", fields)  # type: ignore[arg-type]


def test_compose_and_decode_reject_bad_values() -> None:
    with pytest.raises(ValueOutOfRange, match=r"'node' = 1024 is out of range 0..1023"):
        SNOWFLAKE.compose(timestamp=1, node=1024, sequence=0)
    with pytest.raises(ValueOutOfRange, match="no value for field 'node'"):
        SNOWFLAKE.compose(timestamp=1, sequence=0)
    with pytest.raises(ValueOutOfRange, match="no field 'shard'"):
        SNOWFLAKE.compose(timestamp=1, node=1, sequence=0, shard=3)
    with pytest.raises(ValueOutOfRange, match="never issued"):
        SNOWFLAKE.compose(timestamp=0, node=0, sequence=0)
    for bad in (0, -5, MAX_ID + 1):
        with pytest.raises(ValueOutOfRange):
            SNOWFLAKE.decode(bad)
    with pytest.raises(ValueOutOfRange, match="integer"):
        SNOWFLAKE.decode("12")  # type: ignore[arg-type]


def test_unknown_layout_names_the_choices() -> None:
    with pytest.raises(LayoutError, match="choose one of snowflake, traceid"):
        get_layout("snowflak")


def test_every_layout_reports_capacity_nodes_and_end() -> None:
    for layout in BUILTIN_LAYOUTS.values():
        facts = layout.to_dict()
        assert facts["nodes"] >= 64
        assert facts["runs_out"]
        if layout.is_time_based:
            assert facts["ids_per_second_per_node"] > 0


def test_first_id_at_separates_the_ids_of_earlier_ticks() -> None:
    layout = get_layout("snowflake")
    now = time.time_ns()
    bound = layout.first_id_at(now)
    tick_start = layout.epoch_ns + layout.tick_of(now) * layout.unit_ns
    made = layout.compose(timestamp=layout.tick_of(now), node=0, sequence=0)
    assert bound == made  # the smallest ID of that tick
    earlier = layout.compose(timestamp=layout.tick_of(tick_start - 1), node=1023, sequence=4095)
    assert earlier < bound <= layout.compose(timestamp=layout.tick_of(now), node=5, sequence=9)
    assert layout.first_id_at(0) == 0  # before the epoch: every ID is above


@pytest.mark.parametrize(("name", "why"), [("traceid", "which wraps"), ("decimal", "'counter'")])
def test_first_id_at_refuses_layouts_not_sorted_by_time(name: str, why: str) -> None:
    with pytest.raises(LayoutError, match=why):
        get_layout(name).first_id_at(time.time_ns())
