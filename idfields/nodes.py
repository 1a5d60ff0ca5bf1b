"""Node sources: where a generator gets the value of its layout's Node fields.

A source hands out an :class:`Assignment` when a generator starts, when a generator of a
layout without a timestamp (DecimalId, runid) has used up its sequence, and in a child after
``fork()``. Fixed sources (an explicit value, the environment, development mode) serve the
process that created them: a forked child asking for the parent's node gets an error (even if
the parent never used it), a generator rebuilt on a node in the same process starts after its
predecessor's IDs, and a used-up DecimalId/runid block is never handed out again. Lease sources
(the database coordination of the ORM layers) give a fresh, fenced value every time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from idfields import _forking
from idfields.errors import NodeError, NodeNotConfigured, ValueOutOfRange
from idfields.layouts import Layout, Node, PlacedField

__all__ = [
    "Assignment",
    "DevelopmentNode",
    "EnvironmentNode",
    "NodeSource",
    "StaticNode",
    "default_source",
]

DEVELOPMENT_ENV = "IDFIELDS_DEVELOPMENT"


@dataclass(frozen=True)
class Assignment:
    """Node field values for one generator, and the time window it may issue in.

    - ``not_before_ns`` fences a reused lease: the generator issues only timestamps after it,
      so never one the previous holder could have issued.
    - ``valid_until_ns`` is the lease's end: the generator never issues a timestamp past it.
      From ``renew_after_ns`` on, it calls ``renew()`` (once per tick at most, with back-off),
      which returns the new ``(renew_after_ns, valid_until_ns)`` or raises NodeError when the
      lease was lost; the generator then takes a new node.
    - ``release(issued_until_ns)`` gives the node back, saying how far the holder issued.
    """

    values: Mapping[str, int]
    not_before_ns: int = 0
    valid_until_ns: int | None = None
    renew_after_ns: int | None = None
    renew: Callable[[], tuple[int, int]] | None = field(default=None, compare=False)
    release: Callable[[int], None] | None = field(default=None, compare=False)


@runtime_checkable
class NodeSource(Protocol):
    """Anything that can assign node values to a generator of a layout."""

    def acquire(self, layout: Layout) -> Assignment:
        """Return node values this process alone may use; raise NodeError if there are none."""
        ...


def validate_values(layout: Layout, values: Mapping[str, int], origin: str) -> dict[str, int]:
    """Check that ``values`` fills exactly the layout's Node fields, each within range."""
    wanted = {placed.name for placed in layout.node_fields}
    if set(values) != wanted:
        raise NodeError(
            f"{origin} gave fields {sorted(values)} but layout {layout.name!r} needs "
            f"{sorted(wanted)}; give a value for each"
        )
    checked: dict[str, int] = {}
    for placed in layout.node_fields:
        value = values[placed.name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise NodeError(f"{origin}: {placed.name} must be an integer, got {value!r}")
        try:
            layout.check_value(placed, value)
        except ValueOutOfRange as error:
            raise NodeError(f"{origin}: {error}") from None
        checked[placed.name] = value
    return checked


def _given_values(layout: Layout, values: Mapping[str, int], origin: str) -> dict[str, int]:
    """Node values a deployment set by hand: checked, and a test-only 0 (DecimalId's
    launch_id) refused outside development mode."""
    checked = validate_values(layout, values, origin)
    for placed in layout.node_fields:
        spec = placed.spec
        test_zero = isinstance(spec, Node) and spec.zero_is_test and checked[placed.name] == 0
        if test_zero and not development_mode():
            raise NodeError(
                f"{origin}: {placed.name}=0 is reserved for tests; record a launch "
                f"(1..{placed.maximum}) or set {DEVELOPMENT_ENV}=1 on a developer machine"
            )
    return checked


class _FixedClaims:
    """How far this process's generators issued on each fixed node, so a generator rebuilt on a
    node (after close, or a settings change) starts after its predecessor's IDs, as a lease
    would. A layout without a timestamp cannot be fenced (its counter restarts), so its block is
    handed out once per process. Two generators used at the same time on one fixed node are a
    configuration error no source can fence: give each process one generator per layout.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._issued_until: dict[tuple[Layout, tuple[tuple[str, int], ...]], int] = {}
        _forking.track(self)

    def forked(self) -> None:
        self._lock = threading.Lock()  # the parent's may have been held by another thread

    def claim(self, layout: Layout, values: dict[str, int], description: str) -> Assignment:
        key = (layout, tuple(sorted(values.items())))
        with self._lock:
            if layout.timestamp is None and key in self._issued_until:
                raise NodeError(
                    f"{description} of layout {layout.name!r} was used by this process and "
                    "cannot be renewed: its counter would start again and repeat IDs. Use a "
                    "source that hands out fresh values (DecimalSource, RunIdSource)"
                )
            fence = self._issued_until.setdefault(key, 0)

        def release(issued_until_ns: int) -> None:
            with self._lock:
                self._issued_until[key] = max(self._issued_until.get(key, 0), issued_until_ns)

        return Assignment(values, not_before_ns=fence, release=release)

    def forget(self) -> None:
        with self._lock:
            self._issued_until.clear()


_fixed_claims = _FixedClaims()


def forget_fixed_claims() -> None:
    """Forget how far this process issued on each fixed node: for test suites only.

    The claims fence a generator rebuilt on a node after its predecessor's IDs, and last for the
    process; in a test process that lets one test's fake clock (say, in 2030) fence the node of
    every later test. A fixture calls this between tests, each of which then starts as a fresh
    process would. Never call it while generators on fixed nodes are in use: a rebuilt one
    could repeat their IDs.
    """
    _fixed_claims.forget()


def forked_child_error(description: str, owner_pid: int) -> NodeError:
    """The refusal a forked child gets for a fixed node of its parent (used or not there yet)."""
    return NodeError(
        f"{description} belongs to the parent process (pid {owner_pid}); this forked child "
        f"(pid {os.getpid()}) must not share it. Give each process its own node (a lease "
        "source, or IDFIELDS_NODE_ID set per worker), or create the generator after the fork"
    )


class FixedSource:
    """Shared rule of fixed sources: they serve the process that created them (a forked child
    is refused, whether or not the parent used them yet), reuse within it fenced."""

    description = "a fixed node"

    def __init__(self) -> None:
        self._owner = _forking.process()

    def values_for(self, layout: Layout) -> dict[str, int]:
        """The checked node values this source would give a generator of ``layout``."""
        raise NotImplementedError

    def acquire(self, layout: Layout) -> Assignment:
        if _forking.process() is not self._owner:
            raise forked_child_error(self.description, self._owner.pid)
        return _fixed_claims.claim(layout, self.values_for(layout), self.description)


class StaticNode(FixedSource):
    """Node values set explicitly, e.g. ``StaticNode(17)`` or ``StaticNode(generator_id=92,
    launch_id=65)``, for deployments that assign nodes themselves."""

    def __init__(self, node: int | None = None, /, **values: int) -> None:
        super().__init__()
        self._node = node
        self._fields = values
        shown = node if node is not None else values
        self.description = f"static node {shown}"

    def __repr__(self) -> str:
        return f"StaticNode({self._node if self._node is not None else self._fields})"

    def values_for(self, layout: Layout) -> dict[str, int]:
        values = dict(self._fields)
        if self._node is not None:
            if len(layout.node_fields) != 1:
                names = ", ".join(p.name for p in layout.node_fields)
                raise NodeError(
                    f"layout {layout.name!r} has several node fields ({names}); name them, "
                    f"e.g. StaticNode({', '.join(f'{n}=...' for n in names.split(', '))})"
                )
            values[layout.node_fields[0].name] = self._node
        return _given_values(layout, values, self.description)


class EnvironmentNode(FixedSource):
    """Node values from each Node field's environment variable (``IDFIELDS_NODE_ID`` and kin)."""

    description = "the node from the environment"

    def values_for(self, layout: Layout) -> dict[str, int]:
        values: dict[str, int] = {}
        for placed in layout.node_fields:
            values[placed.name] = _read_env(layout, placed)
        return _given_values(layout, values, "the environment")


class DevelopmentNode(FixedSource):
    """Every Node field at its minimum (launch_id 0): one process on a developer's machine only."""

    description = "the development node"

    def values_for(self, layout: Layout) -> dict[str, int]:
        return {placed.name: placed.minimum for placed in layout.node_fields}


def _env_name(placed: PlacedField) -> str:
    spec = placed.spec
    return spec.env if isinstance(spec, Node) else "IDFIELDS_NODE_ID"


def _read_env(layout: Layout, placed: PlacedField) -> int:
    name = _env_name(placed)
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        raise NodeNotConfigured(
            f"{name} is not set; layout {layout.name!r} needs {placed.name} in "
            f"{placed.minimum}..{placed.maximum}: set it per process, or use a lease source"
        )
    try:
        return int(raw)
    except ValueError:
        raise NodeError(f"{name}={raw!r} is not an integer; set it to a whole number") from None


def development_mode() -> bool:
    """True when IDFIELDS_DEVELOPMENT says this is a single-process developer setup."""
    return os.environ.get(DEVELOPMENT_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def default_source(layout: Layout) -> NodeSource:
    """The environment when it names a node, development mode when asked for, else an error.

    There is no silent default: two processes that both picked node 0 would issue the same IDs.
    """
    if all(_env_name(placed) in os.environ for placed in layout.node_fields):
        return EnvironmentNode()
    if development_mode():
        return DevelopmentNode()
    names = ", ".join(sorted({_env_name(p) for p in layout.node_fields}))
    raise NodeNotConfigured(
        f"no node source for layout {layout.name!r}: set {names} per process, pass a node "
        f"(StaticNode or --node), use a database lease (idfields.django_app / sqlalchemy_ext), "
        f"or set {DEVELOPMENT_ENV}=1 for a single-process development setup"
    )
