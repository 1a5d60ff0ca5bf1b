"""RedisIdClient: IDs from a tier of Redis servers, each stamping its own shard id.

Round-robin between the servers as Nathan Kleyn's "Distributed ID Generation" slides (2015) do: a
server that fails (down, timed out, clock too far back, no shard id) is skipped for a short
cool-down and the request goes to the next one, up to ``attempts`` (5) tries before
:class:`RedisIdError` names every server and the last errors. A retried request never repeats an
ID: the script advances the server's state before it replies, so a lost reply only skips IDs.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from idfields.errors import (
    InvalidArgument,
    LayoutExhausted,
    NodeError,
    RedisIdError,
    ValueOutOfRange,
    WrongArgumentType,
)
from idfields.generators._base import check_take_count
from idfields.layouts import Layout, get_layout
from idfields.redisid._script import (
    EXHAUSTED,
    LUA,
    NO_SHARD,
    WAIT,
    script_args,
    shard_field,
    state_key,
)

if TYPE_CHECKING:
    import redis
    from redis.commands.core import Script

DEFAULT_ATTEMPTS = 5


def configure_shard(
    client: redis.Redis, shard: int, layout: str | Layout = "snowflake", *, replace: bool = False
) -> int:
    """Give one Redis server its shard id for ``layout`` (an admin call, once per server).

    Every server of a tier needs its own shard id: two servers sharing one issue the same IDs.
    An existing, different shard id is kept unless ``replace`` (only safe when no other server
    has had the new one during the last ``max_back`` of the clock).
    """
    resolved = get_layout(layout)
    placed = shard_field(resolved)
    if isinstance(shard, bool) or not isinstance(shard, int):
        raise ValueOutOfRange(f"a shard id must be an integer, got {shard!r}")
    resolved.check_value(placed, shard)
    key = state_key(resolved)
    if replace:
        client.hset(key, "shard", shard)
        return shard
    client.hsetnx(key, "shard", shard)
    current = int(client.hget(key, "shard"))  # type: ignore[arg-type]
    if current != shard:
        raise NodeError(
            f"this Redis server already has shard {current} for layout {resolved.name!r}; keep "
            "it, or pass replace=True once no other server uses the new id"
        )
    return shard


@dataclass
class _Server:
    url: str
    client: redis.Redis
    script: Script
    down_until: float = 0.0
    errors: list[str] = field(default_factory=list)


class RedisIdClient:
    """IDs of a Redis-side Snowflake: ``client()`` for one, ``client.take(n)`` for a batch.

    IDs of one server strictly increase; across servers they are k-sorted (by each server's
    clock). ``take(n)`` asks one server per round trip for up to a tick's sequence (4,096 for
    ``snowflake``) and returns the IDs in increasing order. Thread-safe and fork-safe (redis-py
    reconnects in a child); no node per process is needed: the servers hold the shard ids.
    """

    def __init__(
        self,
        urls: Sequence[str],
        layout: str | Layout = "snowflake",
        *,
        attempts: int = DEFAULT_ATTEMPTS,
        timeout_s: float = 0.5,
        cooldown_s: float = 1.0,
        max_back_s: float = 1.0,
        max_wait_s: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        if isinstance(urls, str) or not urls:
            raise InvalidArgument(
                "RedisIdClient needs a list of server URLs, e.g. ['redis://h1:6379']"
            )
        if attempts < 1:
            raise ValueOutOfRange(f"attempts must be >= 1, got {attempts}")
        self.layout = get_layout(layout)
        shard_field(self.layout)
        self._attempts = attempts
        self._cooldown_s = cooldown_s
        self._max_wait_s = max_wait_s
        self._max_back_ns = round(max_back_s * 1e9)
        self._sleep = sleep
        self._key = state_key(self.layout)
        self._redis_error: type[Exception] = redis.RedisError
        self._servers: list[_Server] = []
        for url in urls:
            connection = redis.Redis.from_url(
                url,
                socket_timeout=timeout_s,
                socket_connect_timeout=timeout_s,
                retry=Retry(NoBackoff(), 0),  # failover is ours: the next server, not this one
            )
            self._servers.append(_Server(url, connection, connection.register_script(LUA)))
        self._turn = itertools.count()
        self._shards: dict[int, str] = {}
        self._shards_lock = threading.Lock()
        stamp, sequence = self.layout.timestamp, self.layout.sequence
        if stamp is None or sequence is None:  # shard_field() already refused such a layout
            raise WrongArgumentType(f"layout {self.layout.name!r} needs a timestamp and a sequence")
        self._step = sequence.multiplier
        self._fields = (stamp.name, self.layout.node_fields[0].name, sequence.name)
        self._sequence_minimum = sequence.minimum

    def __repr__(self) -> str:
        return f"<RedisIdClient {self.layout.name} servers={[s.url for s in self._servers]}>"

    def __call__(self) -> int:
        return self._batch(1)[0]

    def take(self, count: int) -> list[int]:
        """``count`` IDs in increasing order, one round trip per tick's worth."""
        count = check_take_count(count)
        ids: list[int] = []
        per_tick = self.layout.ids_per_tick
        batches = 0
        while len(ids) < count:
            first, got = self._batch(min(count - len(ids), per_tick))
            ids.extend(range(first, first + got * self._step, self._step))
            batches += 1
        if batches > 1:  # the replies may come from several servers
            ids.sort()
        return ids

    def close(self) -> None:
        """Close every server's connections."""
        for server in self._servers:
            server.client.close()

    def _batch(self, wanted: int) -> tuple[int, int]:
        """The first ID and the count of one server's reply (at most ``wanted``)."""
        failures = 0
        waits_in_row = 0
        waited_s = 0.0
        shortest_us = 0
        args = script_args(self.layout, wanted, self._max_back_ns)
        while True:
            server = self._next_server()
            try:
                reply: list[int] = server.script(keys=[self._key], args=args)
            except self._redis_error as error:
                if EXHAUSTED in str(error):
                    raise LayoutExhausted(
                        f"layout {self.layout.name!r} ran out of timestamps on "
                        f"{self.layout.runs_out_text} (server {server.url}); move to a layout "
                        "with a later epoch"
                    ) from error
                failures += 1
                self._fail(server, error)
                if failures >= self._attempts:
                    raise self._gave_up(failures) from error
                continue
            if reply[0] == WAIT:  # this server's tick is used up: try the others first
                waits_in_row += 1
                shortest_us = reply[1] if waits_in_row == 1 else min(shortest_us, reply[1])
                if waits_in_row >= len(self._servers):
                    waited_s += shortest_us / 1e6
                    if waited_s > self._max_wait_s:
                        raise RedisIdError(
                            f"every Redis server ({self._urls()}) kept its sequence used up for "
                            f"{waited_s:.3f} s; the servers' clocks are behind or stuck"
                        )
                    self._sleep(shortest_us / 1e6)
                    waits_in_row = 0
                continue
            tick, shard, first, count = reply
            self._check_shard(shard, server)
            server.errors.clear()
            stamp, node, sequence = self._fields
            values = {stamp: tick, node: shard, sequence: self._sequence_minimum + first}
            return self.layout.compose(values), count

    def _next_server(self) -> _Server:
        """The next server in turn, skipping those cooling down after a failure (unless all are)."""
        servers = self._servers
        start = next(self._turn)
        now = time.monotonic()
        for offset in range(len(servers)):
            server = servers[(start + offset) % len(servers)]
            if server.down_until <= now:
                return server
        return servers[start % len(servers)]

    def _fail(self, server: _Server, error: Exception) -> None:
        server.down_until = time.monotonic() + self._cooldown_s
        text = str(error)
        if NO_SHARD in text:
            text += f" (run idfields.redisid.configure_shard() on {server.url})"
        server.errors[:] = [*server.errors[-2:], f"{type(error).__name__}: {text}"]

    def _gave_up(self, failures: int) -> RedisIdError:
        details = "; ".join(
            f"{server.url}: {server.errors[-1] if server.errors else 'not tried'}"
            for server in self._servers
        )
        return RedisIdError(
            f"no Redis server gave an ID after {failures} tries (servers {self._urls()}). "
            f"Last errors: {details}. Start or reach a server, or add servers to the tier"
        )

    def _check_shard(self, shard: int, server: _Server) -> None:
        """Refuse a tier where two servers share a shard id: their IDs would collide."""
        owner = self._shards.get(shard)
        if owner == server.url:
            return
        with self._shards_lock:
            owner = self._shards.setdefault(shard, server.url)
        if owner != server.url:
            raise RedisIdError(
                f"Redis servers {owner} and {server.url} both have shard {shard} for layout "
                f"{self.layout.name!r}, so they would issue the same IDs; give each server its "
                "own shard id with configure_shard(..., replace=True)"
            )

    def _urls(self) -> str:
        return ", ".join(server.url for server in self._servers)
