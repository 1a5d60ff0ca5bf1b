"""Reconfiguring while IDs are issued: the registries hand over under their lock, the old
generator is closed (fenced, node released) before the new one claims, and never issues again.

Without the handover, ``old.take(1000)`` after ``configure()`` repeats 1,000 of the new
generator's 1,000 IDs, and ``configure()`` or Django's ``override_settings`` under threads
makes thousands of duplicates.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from django.conf import settings
from django.test import override_settings
from generator_support import fresh_node

from idfields._registry import SourceRegistry
from idfields.errors import GeneratorClosed, NodeError
from idfields.generators import IdSource, make_generator
from idfields.layouts import Layout, get_layout
from idfields.nodes import NodeSource, StaticNode
from idfields.sqlalchemy_ext import configure, get_generator, id_default
from idfields.sqlalchemy_ext._registry import context_default
from tests.django_project.testapp.models import Event

pytestmark = pytest.mark.core


def static_five(layout: Layout) -> NodeSource:
    return StaticNode(5)


@pytest.fixture
def sqlalchemy_registry() -> Iterator[None]:
    configure(source=static_five)
    yield
    configure()


def duplicates(ids: list[int]) -> int:
    return len(ids) - len(set(ids))


def issued_or_closed(issue: Callable[[], list[int]]) -> list[int]:
    """What a replaced generator still issues: nothing, it raises (a NodeError) instead."""
    try:
        return issue()
    except NodeError as error:
        assert "closed" in str(error)
        return []


@pytest.mark.usefixtures("sqlalchemy_registry")
def test_a_generator_replaced_by_configure_never_issues_again() -> None:
    old = get_generator("snowflake")
    first = old.take(10)
    configure(source=static_five)
    new = get_generator("snowflake")
    assert new is not old
    ids = first + new.take(1000)
    ids += issued_or_closed(lambda: old.take(1000))
    assert duplicates(ids) == 0
    with pytest.raises(GeneratorClosed, match="never issues again"):
        old()


@pytest.mark.usefixtures("sqlalchemy_registry")
def test_configure_closes_the_old_generators_before_the_new_ones_claim() -> None:
    """Fails for a configure() that forgets to close the old generators."""
    old = get_generator("snowflake")
    old()
    assert old.node == {"node": 5}  # type: ignore[attr-defined]
    configure(source=static_five)
    assert old.node is None  # type: ignore[attr-defined]  # its node given back, fenced
    with pytest.raises(GeneratorClosed):
        old.take(1)
    assert get_generator("snowflake")() > 0


def issue_while(reconfigure: Callable[[], None], next_id: Callable[[], int]) -> list[int]:
    """Two threads issue IDs while this thread calls ``reconfigure`` 100 times."""
    done = threading.Event()
    issued: list[list[int]] = [[], []]
    errors: list[BaseException] = []

    def worker(ids: list[int]) -> None:
        try:
            while not done.is_set():
                ids.extend(next_id() for _ in range(200))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(ids,)) for ids in issued]
    for thread in threads:
        thread.start()
    try:
        for _ in range(100):
            reconfigure()
    finally:
        done.set()
        for thread in threads:
            thread.join()
    assert errors == []
    return issued[0] + issued[1]


@pytest.mark.parametrize("default", ["id_default", "column default"])
@pytest.mark.usefixtures("sqlalchemy_registry")
def test_configure_under_threads_never_repeats_an_id(default: str) -> None:
    """Both defaults: the plain callable and the one SQLAlchemy calls per row (compiled when
    built), which must let go of a closed generator the same way."""
    if default == "id_default":
        next_id = id_default("snowflake")
    else:
        next_id = functools.partial(context_default("snowflake"), None)
    ids = issue_while(lambda: configure(source=static_five), next_id)
    assert len(ids) > 1000
    assert duplicates(ids) == 0


def test_override_settings_under_threads_never_repeats_an_id() -> None:
    static = {"NODE_SOURCE": "static", "NODE": 5}
    field = Event._meta.pk

    def reapply() -> None:
        with override_settings(IDFIELDS=static):
            pass

    with override_settings(IDFIELDS=static):
        ids = issue_while(reapply, field.next_id)  # type: ignore[union-attr]
    assert len(ids) > 1000
    assert duplicates(ids) == 0


def test_a_generator_rebuilt_while_django_swaps_its_settings_uses_the_new_ones() -> None:
    """override_settings swaps ``settings._wrapped`` by clearing the LazySettings' dict first:
    a thread reading a setting in that window gets None for the whole settings object. Before
    the fix, a worker rebuilding its generator in the window read IDFIELDS as absent, cached
    that empty configuration and failed ('NoneType' object has no attribute 'DATABASES', seen
    once in CI) or built from the wrong source; now the thread that changes the settings reads
    them, in the setting_changed signal, and workers use that."""
    static = {"NODE_SOURCE": "static", "NODE": 5}
    field = Event._meta.pk
    with override_settings(IDFIELDS=static):  # the signal closed the generators: rebuilt below
        wrapped = settings._wrapped
        settings.__dict__.clear()  # Django's window: reading any setting now meets None
        try:
            made = field.next_id()  # type: ignore[union-attr]
        finally:
            settings._wrapped = wrapped
    assert get_layout("snowflake").decode(made).values["node"] == 5


def test_a_child_forked_while_another_thread_holds_the_registry_lock_gets_its_source() -> None:
    """gunicorn or multiprocessing forks while a thread of the parent is building a source under
    the registry's lock (a lease claim can take a while): that thread does not exist in the
    child, so the lock it holds must not stay held there, or the child's first ID waits forever."""
    building, release = threading.Event(), threading.Event()

    def build(layout: Layout) -> IdSource:
        if layout.name == "snowflake":
            building.set()
            release.wait(30)
        return make_generator(layout, node=fresh_node() if layout.name == "snowflake" else 7)

    registry = SourceRegistry(get_layout, build)
    holder = threading.Thread(target=registry.get, args=("snowflake",))
    holder.start()
    assert building.wait(10)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            registry.get("traceid")()
            code = 0
        finally:
            os._exit(code)
    release.set()
    holder.join()
    deadline = time.monotonic() + 20
    while (done := os.waitpid(pid, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    if done == (0, 0):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child still waited for the registry's lock after 20 s")
    assert os.waitstatus_to_exitcode(done[1]) == 0
