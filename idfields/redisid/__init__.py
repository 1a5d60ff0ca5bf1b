"""Snowflake IDs made inside Redis (after Nathan Kleyn's "Distributed ID Generation" slides, 2015);
needs the ``redis`` extra.

A Lua script stamps each ID with the server's clock and its shard id (10 bits of ``snowflake``,
set once per server with :func:`configure_shard`), so IDs decode with the ``snowflake`` layout
and no application process needs a node of its own. :class:`RedisIdClient` round-robins over
the servers and fails over to the next one up to five times.

It has the shape of an ``IdGenerator`` (``idfields.generators.IdSource``: ``client()`` and
``client.take(n)``), so whatever calls a generator for a column default can call it instead, e.g.
a SQLAlchemy ``Column(BigInteger, primary_key=True, default=client)``. ``redis`` is imported
when a client is made, never at import time; the script needs Redis >= 5 (effects replication).
"""

from idfields.errors import RedisIdError
from idfields.redisid._client import RedisIdClient, configure_shard

__all__ = ["RedisIdClient", "RedisIdError", "configure_shard"]
