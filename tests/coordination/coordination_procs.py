"""Run a function in many forked processes that start together, and collect what they return."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any

CONTEXT = multiprocessing.get_context("fork")


def run_together(
    count: int, target: Callable[..., Any], *args: Any, timeout: float = 60
) -> list[Any]:
    """Fork ``count`` processes, release them at once with a barrier, return their results.

    ``target(index, *args)`` runs in each child; an exception there fails the caller.
    """
    barrier = CONTEXT.Barrier(count)
    results = CONTEXT.SimpleQueue()
    processes = [
        CONTEXT.Process(target=_child, args=(barrier, results, target, index, args))
        for index in range(count)
    ]
    for process in processes:
        process.start()
    collected = [results.get() for _ in processes]
    for process in processes:
        process.join(timeout)
        if process.exitcode != 0:
            raise AssertionError(f"a child exited with {process.exitcode}")
    errors = [value for ok, value in collected if not ok]
    if errors:
        raise AssertionError(f"{len(errors)} of {count} children failed, first: {errors[0]}")
    return [value for _, value in collected]


def _child(
    barrier: Any, results: Any, target: Callable[..., Any], index: int, args: tuple[Any, ...]
) -> None:
    try:
        barrier.wait(30)
        results.put((True, target(index, *args)))
    except BaseException as error:  # report, so the parent never waits for a result forever
        results.put((False, repr(error)))


def gate_of(size: int) -> Any:
    """A semaphore shared by forked children, e.g. to bound their open connections."""
    return CONTEXT.Semaphore(size)
