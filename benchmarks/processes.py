"""Run one worker function in several processes and collect what each reports."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.context import ForkContext, SpawnContext


def gather(
    context: ForkContext | SpawnContext,
    target: Callable[..., None],
    args: tuple[Any, ...],
    processes: int,
) -> list[Any]:
    """Start ``processes`` copies of ``target(*args, results)``, each putting one value in the
    ``results`` queue, and return those values once every process has ended."""
    results = context.SimpleQueue()
    workers = [context.Process(target=target, args=(*args, results)) for _ in range(processes)]
    for worker in workers:
        worker.start()
    values = [results.get() for _ in workers]
    for worker in workers:
        worker.join()
    return values
