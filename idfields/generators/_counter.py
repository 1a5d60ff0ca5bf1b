"""CounterGenerator: IDs of layouts without a timestamp (DecimalId, runid)."""

from __future__ import annotations

from idfields.errors import WrongArgumentType
from idfields.generators._base import IdGenerator
from idfields.generators._hotpath import CounterCore
from idfields.layouts import Layout
from idfields.nodes import NodeSource


class CounterGenerator(CounterCore, IdGenerator):
    """A counter inside a block named by the node fields (generator_id + launch_id, run id);
    a used-up block is replaced by a fresh one from the node source."""

    def __init__(
        self, layout: str | Layout, source: NodeSource | None = None, *, node: int | None = None
    ) -> None:
        super().__init__(layout, source, node=node)
        if self.layout.timestamp is not None:
            raise WrongArgumentType(
                f"layout {self.layout.name!r} has a timestamp; use TimeGenerator"
            )

    def _ensure_room(self, wanted: int, waited_ns: int) -> int:
        if not self._room():
            self._renew()
        return 0

    def _renew(self) -> None:
        """A fresh block: at first use, after fork, and when the counter is used up."""
        self._assign()
        self._open(self._node_base, self._per_block)
