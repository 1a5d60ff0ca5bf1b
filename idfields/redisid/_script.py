"""The Lua script that makes IDs inside Redis, and the layout facts it is called with.

The script reads Redis' own clock (``TIME``), so every ID of one server is stamped by one clock
whatever the clients' clocks say. Its state lives in one hash per layout on the server
(``idfields:redis:<layout>``: ``shard``, ``tick``, ``index``), so IDs of one server strictly
increase across clients, and a replica promoted after a failover continues from the replicated
state. A reply is ``{tick, shard, first_index, count}``; the client composes the IDs (Lua numbers
are doubles and cannot hold a 63-bit ID exactly, while every part of one can).

When the current tick's sequence is used up, the script of Nathan Kleyn's "Distributed ID
Generation" slides (2015) blocks until the clock moves on. A script cannot sleep, and spinning on
``TIME`` would stall every other client of the single-threaded server (and Redis may freeze the
time a script sees), so the script replies ``{-1, microseconds_to_wait}`` instead: the client asks
another server at once, and sleeps only when every server said so. When the clock stepped back, the
script carries on in its last tick while its sequence lasts; more than ``max_back`` ticks behind it
replies an error rather than issue anything.
"""

from __future__ import annotations

from idfields.errors import LayoutError
from idfields.layouts import Layout, PlacedField

KEY_PREFIX = "idfields:redis:"
NO_SHARD = "IDFIELDS_NO_SHARD"
CLOCK_BACK = "IDFIELDS_CLOCK_BACK"
EXHAUSTED = "IDFIELDS_EXHAUSTED"
WAIT = -1

# KEYS[1]: the layout's state hash.
# ARGV: wanted, epoch_us, unit_us, ids_per_tick, max_tick, max_back_ticks.
LUA = f"""
local state = redis.call('HMGET', KEYS[1], 'shard', 'tick', 'index')
if not state[1] then
  return redis.error_reply('{NO_SHARD} no shard id is set in ' .. KEYS[1])
end
local per_tick = tonumber(ARGV[4])
local clock = redis.call('TIME')
local since_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2]) - tonumber(ARGV[2])
local unit_us = tonumber(ARGV[3])
local now = math.floor(since_us / unit_us)
local last = tonumber(state[2]) or -1
local used = tonumber(state[3]) or (per_tick - 1)
local tick, first
if now > last then
  tick, first = now, 0
elseif last - now > tonumber(ARGV[6]) then
  return redis.error_reply('{CLOCK_BACK} the clock is ' .. string.format('%d', last - now) ..
    ' ticks behind the last ID')
elseif used + 1 < per_tick then
  tick, first = last, used + 1
else
  return {{{WAIT}, (last + 1) * unit_us - since_us}}
end
if tick > tonumber(ARGV[5]) then
  return redis.error_reply('{EXHAUSTED} the timestamp ran out')
end
local count = math.min(tonumber(ARGV[1]), per_tick - first)
redis.call('HSET', KEYS[1], 'tick', string.format('%d', tick),
  'index', string.format('%d', first + count - 1))
return {{tick, tonumber(state[1]), first, count}}
"""


def state_key(layout: Layout) -> str:
    """The hash holding one layout's shard id and last (tick, index) on a server."""
    return KEY_PREFIX + layout.name


def shard_field(layout: Layout) -> PlacedField:
    """The layout's single Node field (the shard), or an error saying which layouts fit."""
    stamp = layout.timestamp
    unit_ns = layout.unit_ns if stamp is not None else 0
    if (
        stamp is None
        or layout.wraps
        or layout.sequence is None
        or len(layout.node_fields) != 1
        or unit_ns % 1000
    ):
        raise LayoutError(
            f"layout {layout.name!r} does not fit Redis IDs: they need a non-wrapping timestamp "
            "in whole microseconds or coarser (Redis TIME has microseconds), one Node field "
            "(the shard) and a Sequence, like 'snowflake' or 'snowflake_js'"
        )
    return layout.node_fields[0]


def script_args(layout: Layout, wanted: int, max_back_ns: int) -> list[int]:
    """ARGV of the script for ``wanted`` IDs of ``layout``."""
    stamp = layout.timestamp
    if stamp is None:  # shard_field() already refused such a layout
        raise LayoutError(f"layout {layout.name!r} has no timestamp")
    unit_ns = layout.unit_ns
    return [
        wanted,
        layout.epoch_ns // 1000,
        unit_ns // 1000,
        layout.ids_per_tick,
        stamp.maximum,
        max_back_ns // unit_ns,
    ]
