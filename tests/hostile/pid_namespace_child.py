"""Run as PID 1 of a PID namespace (``unshare --pid --fork``): a generator on a fixed node, then
a child forked into a new PID namespace, where it is PID 1 too. Prints ``<child IDs> <shared>
<refused>``: the child's count of IDs, how many of them the parent issued as well, and 1 when
the child was refused the node (NodeError naming the parent)."""

from __future__ import annotations

import ctypes
import os
import sys
from array import array

from idfields import NodeError, make_generator

CLONE_NEWPID = 0x20000000


def main(node: int) -> None:
    generator = make_generator("snowflake", node=node)
    parent = [generator() for _ in range(10)]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWPID) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWPID)")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # PID 1 of the new namespace, like its parent in its own
        os.close(read_end)
        refused = 0
        try:
            ids = [generator() for _ in range(100_000)]
        except NodeError as error:
            ids, refused = [], int("belongs to the parent process" in str(error))
        view = memoryview(array("q", [refused, *ids]).tobytes())
        while view:
            view = view[os.write(write_end, view) :]
        os._exit(0)
    os.close(write_end)
    parent += [generator() for _ in range(100_000)]
    chunks = []
    while chunk := os.read(read_end, 1 << 20):
        chunks.append(chunk)
    assert os.waitpid(pid, 0)[1] == 0
    sent = array("q")
    sent.frombytes(b"".join(chunks))
    refused, child = sent[0], sent[1:]
    print(len(child), len(set(parent) & set(child)), refused)


if __name__ == "__main__":
    main(int(sys.argv[1]))
