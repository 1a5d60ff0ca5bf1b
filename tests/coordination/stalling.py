"""A real database with a process preempted between reading the lease rows and writing its
claim, so a test can run another claim in that gap."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from dbapi_database import DbApiDatabase

from idfields.coordination import Result


class Stalling:
    """The real database; ``stall``, when set, runs once before the next claim's first write
    (on PostgreSQL the claim's transaction, which takes the node's advisory lock)."""

    def __init__(self, inner: DbApiDatabase) -> None:
        self._inner = inner
        self.stall: Callable[[], None] | None = None

    @property
    def vendor(self) -> str:
        return self._inner.vendor

    def execute(self, sql: str, params: Sequence[object] = ()) -> Result:
        if sql.startswith(("UPDATE idfields_node_lease SET holder", "INSERT")):
            self._run_stall()
        return self._inner.execute(sql, params)

    def atomic(self) -> AbstractContextManager[None]:
        self._run_stall()
        return self._inner.atomic()

    def _run_stall(self) -> None:
        stall, self.stall = self.stall, None
        if stall is not None:
            stall()
