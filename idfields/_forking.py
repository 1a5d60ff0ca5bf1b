"""The one fork hook: objects holding per-process state (a node, a lock, an open file, a
connection) are told in the child, before any other code of the child runs.

``os.register_at_fork`` runs its callbacks in the child while only the forking thread exists,
so a lock another thread held in the parent is replaced there, never waited on.
"""

from __future__ import annotations

import os
import weakref
from typing import Protocol


class Forkable(Protocol):
    def forked(self) -> None:
        """In the child: drop what belongs to the parent (node, lock, file, connection)."""


_tracked: weakref.WeakSet[Forkable] = weakref.WeakSet()


def track(owner: Forkable) -> None:
    """Call ``owner.forked()`` in every child forked while ``owner`` lives."""
    _tracked.add(owner)


def _after_fork_in_child() -> None:
    for owner in list(_tracked):
        owner.forked()


os.register_at_fork(after_in_child=_after_fork_in_child)
