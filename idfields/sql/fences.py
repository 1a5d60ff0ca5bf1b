"""How the database functions name a layout's advisory locks and durable fences, for the app
side's claims, which take the same locks and read the same fences (L8, D7 of
docs/explanation/lease-protocol-database.md)."""

from __future__ import annotations

import hashlib

# Implementation: nothing here is API.
__all__: list[str] = []

#: Sequences per layout: nodes that agree mod this share one.
PER_LAYOUT = 1024


def lease_lock_key(lease_key: str) -> int:
    """The advisory-lock class of a layout's leases, as the SQL functions' lease_lock_key()
    computes it (31 bits of md5)."""
    digest = hashlib.md5(f"idfields_node_lease:{lease_key}".encode(), usedforsecurity=False)
    return int.from_bytes(digest.digest()[:4], "big") & 0x7FFF_FFFF


def fence_sequence(lease_key: str, node: int) -> str:
    """The sequence in schema idfields holding a node's durable fence, as the functions'
    fence_sequence() names it: the layout's own, shared with its nodes that agree mod 1,024."""
    return f"{fence_prefix(lease_key)}{node % PER_LAYOUT}"


def fence_prefix(lease_key: str) -> str:
    return f"fence_{lease_lock_key(lease_key)}_"


def fence_nodes(first: int, last: int) -> tuple[int, int]:
    """The nodes whose fences a layout's nodes ``first..last`` use: at most 1,024."""
    return first, min(last, first + PER_LAYOUT - 1)
