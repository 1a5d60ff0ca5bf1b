"""A process holding a node lease until it is stopped: ``python lease_process.py URL MODE``.

It claims a node of the snowflake layout through ``id_column``'s registry on ``URL`` (a SQLAlchemy
URL, async ones too), prints ``node=<n>`` and waits. MODE is how it meets SIGTERM:

- ``plain``: no handler of its own (the default action ends it);
- ``graceful``: a handler of its own that ends the main loop, then a clean exit;
- ``reraise``: a server's way (uvicorn's): a handler installed after the claim that stops the
  loop, then the previous handler restored and the signal raised again.
"""

from __future__ import annotations

import signal
import sys
import time

import sqlalchemy as sa

from idfields.coordination import LeaseSource
from idfields.sqlalchemy_ext import SQLAlchemyDatabase, configure, get_generator, metadata

stopping: list[int] = []


def main(url: str, mode: str) -> None:
    engine = sa.create_engine(url)
    metadata.create_all(engine)
    configure(source=LeaseSource(SQLAlchemyDatabase(engine), ttl_s=60))
    generator = get_generator("snowflake")
    generator()
    previous = None
    if mode in ("graceful", "reraise"):
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    print(f"node={generator.node['node']}", flush=True)  # type: ignore[attr-defined]
    while not stopping:
        time.sleep(0.01)
    generator()  # a graceful shutdown still issues IDs for the work in flight
    if mode == "reraise":
        signal.signal(signal.SIGTERM, previous)
        signal.raise_signal(signal.SIGTERM)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
