"""A process holding a node lease until stopped: ``python lease_process.py URL MODE [LAYOUT]``.

It claims a node of the layout ``LAYOUT`` (snowflake-shaped; default: snowflake itself) through
``id_column``'s registry on ``URL`` (a sync SQLAlchemy URL), prints ``node=<n>`` and waits. MODE
is how it meets SIGTERM:

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
from idfields.layouts import Layout, Node, Sequence, Timestamp, get_layout
from idfields.layouts._builtin import SNOWFLAKE_EPOCH
from idfields.sqlalchemy_ext import SQLAlchemyDatabase, configure, get_generator, metadata

stopping: list[int] = []


def layout_named(name: str) -> Layout:
    if name == "snowflake":
        return get_layout(name)
    return Layout(name, [Timestamp(41, unit="ms", epoch=SNOWFLAKE_EPOCH), Node(10), Sequence(12)])


def main(url: str, mode: str, layout_name: str = "snowflake") -> None:
    engine = sa.create_engine(url)
    metadata.create_all(engine)
    layout = layout_named(layout_name)
    own = [] if layout_name == "snowflake" else [layout]
    configure(source=LeaseSource(SQLAlchemyDatabase(engine), ttl_s=60), layouts=own)
    generator = get_generator(layout)
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
    main(*sys.argv[1:4])
