"""A generator made before fork() and first used after it: gunicorn --preload, Celery prefork.

The node belongs to the process that created the generator (or claimed a node for it); a child
that inherits it must take its own node from a lease source, or be refused, never share it.
"""

from __future__ import annotations

import multiprocessing
import os
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from generator_support import fresh_node

from idfields import Assignment, Layout, NodeError, StaticNode, make_generator
from idfields.generators import IdGenerator

pytestmark = pytest.mark.slow


def _in_child(body: Callable[[], list[int]], out: Path) -> int:
    """Fork; the child runs ``body`` and writes its IDs (or its NodeError) to ``out``."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            try:
                out.write_bytes(array("q", body()).tobytes())
            except NodeError as error:
                out.with_suffix(".error").write_text(str(error))
            code = 0
        finally:
            os._exit(code)
    return pid


def _child_ids(out: Path) -> list[int]:
    ids = array("q")
    if out.exists():
        ids.frombytes(out.read_bytes())
    return list(ids)


@pytest.fixture
def env_node(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    node = fresh_node()
    monkeypatch.setenv("IDFIELDS_NODE_ID", str(node))
    yield node


@pytest.mark.parametrize("how", ["node=", "IDFIELDS_NODE_ID"])
def test_a_fixed_node_made_before_fork_and_first_used_after_is_never_shared(
    how: str, tmp_path: Path, env_node: int
) -> None:
    if how == "node=":
        generator = make_generator("snowflake", node=fresh_node())
    else:
        generator = make_generator("snowflake")
    out = tmp_path / "child"
    pid = _in_child(lambda: generator.take(300_000), out)
    parent = generator.take(300_000)
    assert os.waitpid(pid, 0)[1] == 0
    child = _child_ids(out)
    duplicates = len(set(parent) & set(child))
    assert duplicates == 0, f"{duplicates:,} duplicates"
    message = out.with_suffix(".error").read_text()
    assert "belongs to the parent process" in message and "IDFIELDS_NODE_ID" in message
    assert generator.take(10)[0] > parent[-1]  # the parent keeps its node


def test_a_decimal_block_in_use_before_fork_is_never_continued_by_the_child(tmp_path: Path) -> None:
    generator = make_generator("decimal", StaticNode(generator_id=fresh_node(), launch_id=1))
    parent = [generator()]  # the block in use: its next 922 million IDs are the parent's
    out = tmp_path / "child"
    pid = _in_child(lambda: [generator() for _ in range(1000)], out)  # the single-call hot path
    parent += [generator() for _ in range(1000)]
    assert os.waitpid(pid, 0)[1] == 0
    assert _child_ids(out) == []
    assert "belongs to the parent process" in out.with_suffix(".error").read_text()
    assert parent == sorted(set(parent))


_POOL_GENERATOR: IdGenerator | None = None


def _pool_take(count: int) -> list[int] | str:
    assert _POOL_GENERATOR is not None
    try:
        return _POOL_GENERATOR.take(count)
    except NodeError as error:
        return str(error)


def test_a_module_level_generator_in_a_fork_pool_never_repeats() -> None:
    global _POOL_GENERATOR
    _POOL_GENERATOR = make_generator("snowflake", node=fresh_node())
    try:
        with multiprocessing.get_context("fork").Pool(4) as pool:
            results = pool.map(_pool_take, [50_000] * 4, chunksize=1)
        ids = [value for result in results if isinstance(result, list) for value in result]
        duplicates = len(ids) - len(set(ids))
        assert duplicates == 0, f"{duplicates:,} duplicates of {len(ids):,}"
        assert all(isinstance(result, str) and "forked child" in result for result in results)
    finally:
        _POOL_GENERATOR = None


class PerProcess:
    """A lease-like source: a fresh node for every claim, whichever process asks."""

    def __init__(self) -> None:
        self.next_node = multiprocessing.get_context("fork").Value("i", 1)

    def acquire(self, layout: Layout) -> Assignment:
        with self.next_node.get_lock():
            node = self.next_node.value
            self.next_node.value += 1
        return Assignment({layout.node_fields[0].name: node})


def test_a_lease_source_made_before_fork_claims_anew_in_the_child(tmp_path: Path) -> None:
    generator = make_generator("snowflake", PerProcess())
    out = tmp_path / "child"
    pid = _in_child(lambda: generator.take(100_000), out)
    parent = generator.take(100_000)
    assert os.waitpid(pid, 0)[1] == 0
    child = _child_ids(out)
    assert len(child) == 100_000 and not set(parent) & set(child)
