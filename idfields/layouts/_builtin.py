"""The built-in layouts, each as its public reference describes it.

References, cited below by the name in brackets:

- [slides] Nathan Kleyn, "Distributed ID Generation" (slides, 2015): Snowflake IDs made by a
  Lua script inside Redis.
- [pattern] "Pattern: ID Generation" (an article on designing integer IDs): TraceId, DecimalId.
- [globalid] "Generating Globally Unique IDs" (2020, an Elixir exercise): 64-bit IDs from up to
  1,024 nodes that never talk to each other.
- [chronicle] Chronicle Software's ``DistributedUniqueTimeProvider`` (the open-source Chronicle
  Bytes library, Java).
- [chibrary] Peter Harkins, "Distributed ID Generation and Bit Packing" (the call numbers of
  his mailing-list archive Chibrary).

The layouts:

- ``snowflake``: 0 | 41-bit ms since 2024-01-01 | 10-bit node | 12-bit sequence
  [slides]: 4,096 IDs per ms per node, 1,024 nodes, about 69 years.
- ``traceid``: 0 | 25-bit seconds, wrapping | 16-bit node_no | 22-bit counter >= 1
  [pattern]. The timestamp wraps every 2**25 s (about 388 days), so TraceIds are
  *periodically* monotonic: an ID is unique only among rows younger than one period. Keep rows
  (or partitions) for less than 388 days, or key them by (created_at, id), and sort by a fully
  monotonic column across periods. [pattern]'s thread_id shares the 22 bits with the counter;
  idfields needs no thread bits because one thread-safe sequence serves the whole process.
- ``decimal`` (DecimalId [pattern]): counter * 10**10 + generator_id * 10**5 + launch_id. The
  counter stops at 922_337_202 (not 922_337_203) so generator_id keeps its full 0..99_999;
  launch_id 0 is for tests only. Sharded monotonicity: increasing per generator, not across
  generators.
- ``globalid`` [globalid]: 10-bit node | 46-bit ms since 1970 | 7-bit counter. The exercise's
  64-bit 10/47/7 fitted into 63 bits: the timestamp lost one bit, which still lasts until 4199.
  The node leads, so IDs sort by node first: unique, but not k-sorted across nodes.
- ``chronicle`` [chronicle]: nanoseconds since 1970 whose last two
  decimal digits are the host id (0..99): it reads as a timestamp, 10 million IDs/s per host,
  and fits 63 bits until 2262-04-11.
- ``runid`` [chibrary]: 3-bit version | 30-bit run id | 14-bit sequence, 47 bits, so
  an ID is at most 8 base62 characters; a fresh run id comes from the coordinator whenever the
  16,384 IDs of a run are used up.
- ``snowflake_js``: 41-bit ms | 6-bit node | 6-bit sequence, every ID below 2**53 for JavaScript.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from types import MappingProxyType

from idfields.errors import LayoutError
from idfields.layouts._fields import Constant, Node, Sequence, Timestamp
from idfields.layouts._layout import Layout, keep_bare_lease_key

SNOWFLAKE_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)

SNOWFLAKE = Layout(
    "snowflake",
    [Timestamp(41, unit="ms", epoch=SNOWFLAKE_EPOCH), Node(10), Sequence(12)],
    description="Twitter-style 41/10/12: ms since 2024-01-01, node, sequence",
)
TRACEID = Layout(
    "traceid",
    [
        Timestamp(25, unit="s", wraps=True),
        Node(16, name="node_no"),
        Sequence(22, name="counter", minimum=1),
    ],
    description="25-bit seconds wrapping every ~388 days, 16-bit node_no, 22-bit counter",
)
DECIMAL = Layout(
    "decimal",
    [
        Sequence(9, name="counter", minimum=1, maximum=922_337_202),
        Node(5, name="generator_id", env="IDFIELDS_GENERATOR_ID"),
        Node(5, name="launch_id", env="IDFIELDS_LAUNCH_ID", zero_is_test=True),
    ],
    base=10,
    description="DecimalId: counter * 10**10 + generator_id * 10**5 + launch_id",
)
GLOBALID = Layout(
    "globalid",
    [Node(10), Timestamp(46, unit="ms"), Sequence(7, name="counter")],
    description="GlobalId: 10-bit node, 46-bit ms since 1970, 7-bit counter",
)
CHRONICLE = Layout(
    "chronicle",
    [
        Timestamp(17, unit="100ns", maximum=92_233_720_368_547_757),
        Node(2, name="host", env="IDFIELDS_HOST_ID"),
    ],
    base=10,
    description="nanoseconds since 1970 whose last two digits are the host id",
)
RUNID = Layout(
    "runid",
    [
        Constant(3, value=0, name="version"),
        Node(30, name="run", env="IDFIELDS_RUN_ID", minimum=1),
        Sequence(14),
    ],
    description="chibrary call numbers: 3-bit version, 30-bit run id, 14-bit sequence",
)
SNOWFLAKE_JS = Layout(
    "snowflake_js",
    [Timestamp(41, unit="ms", epoch=SNOWFLAKE_EPOCH), Node(6), Sequence(6)],
    js_safe=True,
    description="JavaScript-safe (< 2**53): ms since 2024-01-01, 6-bit node, 6-bit sequence",
)

BUILTIN_LAYOUTS: Mapping[str, Layout] = MappingProxyType(
    {
        keep_bare_lease_key(layout).name: layout
        for layout in (SNOWFLAKE, TRACEID, DECIMAL, GLOBALID, CHRONICLE, RUNID, SNOWFLAKE_JS)
    }
)


def get_layout(layout: str | Layout) -> Layout:
    """Resolve a built-in layout name (or pass a Layout through)."""
    if isinstance(layout, Layout):
        return layout
    try:
        return BUILTIN_LAYOUTS[layout]
    except KeyError:
        names = ", ".join(BUILTIN_LAYOUTS)
        raise LayoutError(f"unknown layout {layout!r}; choose one of {names}") from None
