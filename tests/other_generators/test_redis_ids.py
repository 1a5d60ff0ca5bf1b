"""IDs made inside Redis by the Lua script: decoding, failover, clock steps, the clear errors.

Every test starts its own ``redis-server`` processes on free loopback ports (the machine's own
Redis on 6379 is never touched) and kills them at the end.
"""

from __future__ import annotations

import itertools
import random
import socket
import threading
import time
from collections.abc import Callable

import pytest
from othergen_support import RedisServer, free_port

from idfields import IdGenerator, StaticNode, make_generator
from idfields.errors import LayoutError, NodeError, ValueOutOfRange
from idfields.generators import IdSource
from idfields.hostshared import HostSharedGenerator
from idfields.layouts import SNOWFLAKE, SNOWFLAKE_JS
from idfields.redisid import RedisIdClient, RedisIdError, configure_shard
from idfields.redisid._script import state_key

Servers = Callable[[int], list[RedisServer]]


def _tier(servers: list[RedisServer], first_shard: int = 1) -> None:
    for shard, server in enumerate(servers, start=first_shard):
        configure_shard(server.client(), shard)


def _shard(value: int) -> int:
    return value // SNOWFLAKE["node"].multiplier % SNOWFLAKE["node"].radix


def _now_tick() -> int:
    return SNOWFLAKE.tick_of(time.time_ns())


def test_ids_decode_with_the_snowflake_layout(redis_servers: Servers) -> None:
    (server,) = redis_servers(1)
    configure_shard(server.client(), 5)
    client = RedisIdClient([server.url])
    one = client()
    decoded = SNOWFLAKE.decode(one)
    assert decoded.values["node"] == 5
    assert decoded.time_ns is not None and abs(decoded.time_ns - time.time_ns()) < 2e9
    batch = client.take(5000)  # more than one tick's 4,096: two round trips
    assert len(set(batch)) == 5000 and batch == sorted(batch) and batch[0] > one
    assert {SNOWFLAKE.decode(i).values["node"] for i in batch} == {5}
    assert client.take(0) == []


def test_a_narrower_layout_keeps_its_own_state(redis_servers: Servers) -> None:
    (server,) = redis_servers(1)
    configure_shard(server.client(), 9, SNOWFLAKE_JS)
    ids = RedisIdClient([server.url], SNOWFLAKE_JS).take(200)  # 64 per ms: several ticks
    assert len(set(ids)) == 200 and max(ids) < 2**53
    assert {SNOWFLAKE_JS.decode(i).values["node"] for i in ids} == {9}
    assert server.client().hget(state_key(SNOWFLAKE), "shard") is None


@pytest.mark.slow
def test_three_servers_four_threads_one_killed_midway(redis_servers: Servers) -> None:
    servers = redis_servers(3)
    _tier(servers)
    client = RedisIdClient([s.url for s in servers])
    total, per_thread = 300_000, 75_000
    results: list[list[int]] = [[] for _ in range(4)]
    errors: list[BaseException] = []
    halfway = threading.Event()

    def work(index: int) -> None:
        mine = results[index]
        rng = random.Random(index)
        try:
            while len(mine) < per_thread:
                mine.append(client())
                mine.extend(client.take(min(rng.randint(1, 3000), per_thread - len(mine))))
                if len(mine) > per_thread // 2:
                    halfway.set()
        except BaseException as error:
            errors.append(error)
            halfway.set()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    assert halfway.wait(60)
    servers[1].kill()
    for thread in threads:
        thread.join(120)
    assert not errors
    everything = [i for ids in results for i in ids]
    assert len(everything) >= total
    assert len(set(everything)) == len(everything), "an ID was issued twice"
    for ids in results:  # one server's IDs strictly increase, in the order a thread got them
        for shard in (1, 2, 3):
            mine = [i for i in ids if _shard(i) == shard]
            assert all(a < b for a, b in itertools.pairwise(mine))
    shards = {_shard(i) for i in everything}
    assert shards == {1, 2, 3}
    after = {_shard(i) for ids in results for i in ids[-2000:]}
    assert 2 not in after  # the killed server stopped serving; the others took over


def test_all_servers_down_fails_after_five_tries(redis_servers: Servers) -> None:
    servers = redis_servers(2)
    _tier(servers)
    client = RedisIdClient([s.url for s in servers])
    assert client() > 0
    for server in servers:
        server.kill()
    with pytest.raises(RedisIdError) as failure:
        client()
    message = str(failure.value)
    assert "after 5 tries" in message
    assert all(server.url in message for server in servers)
    assert "ConnectionError" in message


def test_five_tries_exactly_then_the_error() -> None:
    """Two 'servers' that accept and hang up count how often the client knocks."""
    accepted = [0]
    listeners = []
    for _ in range(2):
        listener = socket.create_server(("127.0.0.1", free_port()))
        listeners.append(listener)

        def serve(sock: socket.socket = listener) -> None:
            while True:
                try:
                    connection, _ = sock.accept()
                except OSError:
                    return
                accepted[0] += 1
                connection.close()

        threading.Thread(target=serve, daemon=True).start()
    urls = [f"redis://127.0.0.1:{sock.getsockname()[1]}/0" for sock in listeners]
    try:
        with pytest.raises(RedisIdError, match="after 5 tries"):
            RedisIdClient(urls).take(10)
        assert accepted[0] == 5
        with pytest.raises(RedisIdError, match="after 2 tries"):
            RedisIdClient(urls, attempts=2)()
    finally:
        for listener in listeners:
            listener.close()


def test_a_server_without_shard_is_skipped_and_named(redis_servers: Servers) -> None:
    configured, bare = redis_servers(2)
    configure_shard(configured.client(), 4)
    client = RedisIdClient([bare.url, configured.url])
    ids = [client() for _ in range(20)]  # the bare server fails, the next one answers
    assert {SNOWFLAKE.decode(i).values["node"] for i in ids} == {4}
    with pytest.raises(RedisIdError, match=r"configure_shard\(\) on redis://") as failure:
        RedisIdClient([bare.url])()
    assert "IDFIELDS_NO_SHARD" in str(failure.value)


def test_a_restarted_server_without_its_state_refuses(redis_servers: Servers) -> None:
    (server,) = redis_servers(1)
    configure_shard(server.client(), 6)
    client = RedisIdClient([server.url])
    before = client.take(100)
    server.kill()
    server.start()  # same port, empty memory: it has forgotten its shard and last tick
    with pytest.raises(RedisIdError, match="IDFIELDS_NO_SHARD"):
        client()
    configure_shard(server.client(), 6)
    assert client() > max(before)


def test_clock_stepped_back_carries_on_in_the_last_tick(redis_servers: Servers) -> None:
    (server,) = redis_servers(1)
    configure_shard(server.client(), 2)
    ahead = _now_tick() + 300  # as if the server's clock had stepped back by 300 ms
    server.client().hset(state_key(SNOWFLAKE), mapping={"tick": ahead, "index": 10})
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        time.sleep(seconds)

    client = RedisIdClient([server.url], sleep=sleep)
    values = SNOWFLAKE.decode(client()).values
    assert (values["timestamp"], values["sequence"]) == (ahead, 11)
    server.client().hset(state_key(SNOWFLAKE), "index", 4095)  # that tick is used up: wait
    values = SNOWFLAKE.decode(client()).values
    assert values["timestamp"] > ahead and values["sequence"] == 0
    assert len(slept) == 1 and 0.1 < slept[0] <= 0.31


def test_a_clock_far_behind_fails_over(redis_servers: Servers) -> None:
    behind, fine = redis_servers(2)
    _tier([behind, fine])
    behind.client().hset(state_key(SNOWFLAKE), mapping={"tick": _now_tick() + 10_000, "index": 0})
    client = RedisIdClient([behind.url, fine.url])
    ids = [client() for _ in range(10)]
    assert {SNOWFLAKE.decode(i).values["node"] for i in ids} == {2}
    with pytest.raises(RedisIdError, match="IDFIELDS_CLOCK_BACK"):
        RedisIdClient([behind.url])()


def test_two_servers_with_one_shard_are_refused(redis_servers: Servers) -> None:
    servers = redis_servers(2)
    for server in servers:
        configure_shard(server.client(), 1)
    client = RedisIdClient([s.url for s in servers])
    client()
    with pytest.raises(RedisIdError, match="both have shard 1"):
        client()


def test_configure_shard_keeps_an_existing_one(redis_servers: Servers) -> None:
    (server,) = redis_servers(1)
    redis_client = server.client()
    assert configure_shard(redis_client, 3) == 3
    assert configure_shard(redis_client, 3) == 3
    with pytest.raises(NodeError, match="already has shard 3"):
        configure_shard(redis_client, 4)
    assert configure_shard(redis_client, 4, replace=True) == 4
    with pytest.raises(ValueOutOfRange):
        configure_shard(redis_client, 1024)


def test_the_client_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match="list of server URLs"):
        RedisIdClient("redis://127.0.0.1:1/0")
    with pytest.raises(LayoutError, match="does not fit Redis IDs"):
        RedisIdClient(["redis://127.0.0.1:1/0"], "chronicle")


def test_every_id_maker_fits_the_id_source_protocol(tmp_path: object) -> None:
    generator: IdGenerator = make_generator("snowflake", StaticNode(1))
    assert isinstance(generator, IdSource)
    assert isinstance(RedisIdClient(["redis://127.0.0.1:1/0"]), IdSource)
    shared = HostSharedGenerator("chronicle", node=1, path=f"{tmp_path}/state")
    assert isinstance(shared, IdSource)
