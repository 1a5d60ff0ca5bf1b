"""A lease holder as a program of its own, so a test can start it where real deployments run
it: in other PID or time namespaces (``unshare``), as another user behind ``hidepid``
(``setpriv``), on a clock of its own (``faketime``).

``python lease_actor.py VENDOR TARGET LAYOUT NODES TTL_S OUT`` leases one of the NODES nodes
(1 or 2) of a snowflake-shaped layout named LAYOUT and issues IDs until the file ``OUT.stop``
exists, writing every ID to ``OUT`` (8 bytes each) before asking for more. Once it holds a
node it writes the node to ``OUT.node``; when no node is free it writes ``none`` there and
exits. It exits without releasing its lease, as a killed process would.
"""

from __future__ import annotations

import os
import struct
import sys
import time
from pathlib import Path

from dbapi_database import DbApiDatabase

from idfields import Layout, Node, NodeError, Sequence, Timestamp, make_generator
from idfields.coordination import LeaseSource
from idfields.layouts import SNOWFLAKE_EPOCH


def layout_named(name: str, nodes: int) -> Layout:
    """The layout every actor of a test shares: ``nodes`` nodes (1 or 2), so a test can hold
    them all."""
    return Layout(
        name,
        [
            Timestamp(41, unit="ms", epoch=SNOWFLAKE_EPOCH),
            Node(1, maximum=nodes - 1),
            Sequence(12),
        ],
    )


def main(vendor: str, target: str, name: str, nodes: str, ttl_s: str, out: str) -> None:
    database = DbApiDatabase(vendor, target)
    generator = make_generator(
        layout_named(name, int(nodes)), LeaseSource(database, ttl_s=float(ttl_s))
    )
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        first = generator.take(64)
    except NodeError:
        _say(out, "none")
        return
    os.write(fd, struct.pack(f"<{len(first)}q", *first))
    _say(out, str(generator.node["node"]))  # type: ignore[index]
    stop = Path(f"{out}.stop")
    while not stop.exists():
        ids = generator.take(64)
        os.write(fd, struct.pack(f"<{len(ids)}q", *ids))
        time.sleep(0.001)
    os._exit(0)  # no release: the lease stays behind as a killed holder's would


def _say(out: str, node: str) -> None:
    """Write ``OUT.node`` whole (renamed into place): the test reads it as soon as it exists."""
    Path(f"{out}.part").write_text(node)
    os.replace(f"{out}.part", f"{out}.node")


if __name__ == "__main__":
    main(*sys.argv[1:])
