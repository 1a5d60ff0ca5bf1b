"""Run as PID 1 of a PID namespace (``unshare --pid --fork``): state made here, then a child
forked into a new PID namespace, where it is PID 1 too. Prints what the child did with the
parent's state:

- ``node <node>``: a generator on a fixed node. Prints ``<child IDs> <shared> <refused>``: the
  child's count of IDs, how many of them the parent issued as well, and 1 when the child was
  refused the node (NodeError naming the parent).
- ``pool <postgresql url>``: the SQLAlchemy coordination adapter, its pool holding a connection.
  Prints the parent's and the child's backend pids (the same one: both talk on one socket).
"""

from __future__ import annotations

import ctypes
import os
import sys
from array import array
from collections.abc import Callable

from idfields import NodeError, make_generator

CLONE_NEWPID = 0x20000000


def in_new_namespace(child: Callable[[], list[int]]) -> Callable[[], list[int]]:
    """Fork a child into a new PID namespace; it runs ``child`` while the parent goes on.
    Returns what waits for it and gives its numbers."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWPID) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWPID)")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # PID 1 of the new namespace, like its parent in its own
        code = 1
        try:
            os.close(read_end)
            view = memoryview(array("q", child()).tobytes())
            while view:
                view = view[os.write(write_end, view) :]
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)

    def collect() -> list[int]:
        chunks = []
        while chunk := os.read(read_end, 1 << 20):
            chunks.append(chunk)
        os.close(read_end)
        assert os.waitpid(pid, 0)[1] == 0
        sent = array("q")
        sent.frombytes(b"".join(chunks))
        return list(sent)

    return collect


def fixed_node(node: int) -> None:
    generator = make_generator("snowflake", node=node)
    parent = [generator() for _ in range(10)]

    def child() -> list[int]:
        try:
            return [0, *(generator() for _ in range(100_000))]
        except NodeError as error:
            return [int("belongs to the parent process" in str(error))]

    collect = in_new_namespace(child)
    parent += [generator() for _ in range(100_000)]  # while the child issues
    refused, *ids = collect()
    print(len(ids), len(set(parent) & set(ids)), refused)


def pool(url: str) -> None:
    from sqlalchemy import create_engine

    from idfields.sqlalchemy_ext import SQLAlchemyDatabase

    database = SQLAlchemyDatabase(create_engine(url))
    backend = "select pg_backend_pid()"
    parent = database.execute(backend).rows[0][0]  # its connection stays in the pool
    child = in_new_namespace(lambda: [database.execute(backend).rows[0][0]])()
    print(parent, child[0])


if __name__ == "__main__":
    if sys.argv[1] == "node":
        fixed_node(int(sys.argv[2]))
    else:
        pool(sys.argv[2])
