"""Benchmarks of idfields against its peers, run together by ``python -m benchmarks``.

Every ``benchmarks/bench_*.py`` module exposes ``run(quick: bool = False) -> list[Row]`` (see
:mod:`benchmarks.rows`). A module that cannot run here (a missing import or server) raises
:class:`Skip`, or lets the ImportError or connection error through: the harness reports it as
skipped with the reason, and runs the others.
"""


class Skip(Exception):
    """Raised by a benchmark module that cannot run on this machine; the message says why."""
