"""Run ids from the coordinator: a fresh one at start and at every exhausted sequence."""

from __future__ import annotations

import secrets

import pytest
from dbapi_database import DbApiDatabase
from othergen_support import run_processes

from idfields import Constant, Layout, Node, Sequence, get_layout, make_generator
from idfields.coordination import counter_value
from idfields.coordination._runids import RunIdSource, counter_name
from idfields.errors import LayoutExhausted, NodeError


def _narrow(run_bits: int = 30) -> Layout:
    """``runid`` with a 3-bit sequence: a new run id every 8 IDs."""
    return Layout(
        f"runid_test_{secrets.token_hex(4)}",
        [
            Constant(3, value=0, name="version"),
            Node(run_bits, name="run", env="IDFIELDS_RUN_ID", minimum=1),
            Sequence(3),
        ],
    )


def _issue(index: int, database: DbApiDatabase, layout: Layout, count: int) -> list[int]:
    generator = make_generator(layout, RunIdSource(database))
    return [generator() for _ in range(count)]


@pytest.mark.slow
def test_two_processes_exhaust_their_runs_many_times(counter_db: DbApiDatabase) -> None:
    layout = _narrow()
    first, second = run_processes(2, _issue, counter_db, layout, 200)  # 25 runs each
    everything = first + second
    assert len(set(everything)) == 400
    assert first == sorted(first) and second == sorted(second)
    runs = {layout.decode(i).values["run"] for i in everything}
    assert len(runs) == 50 and runs == set(range(1, 51))
    assert counter_value(counter_db, counter_name(layout)) == 50


def test_the_runid_layout_takes_its_run_from_the_counter(counter_db: DbApiDatabase) -> None:
    source = RunIdSource(counter_db)
    taken = counter_value(counter_db, "run:runid")
    generator = make_generator("runid", source)
    value = generator()
    assert generator.node == {"run": taken + 1}
    assert generator.layout.decode(value).values == {"version": 0, "run": taken + 1, "sequence": 0}


def test_the_run_ids_run_out_with_a_clear_error(counter_db: DbApiDatabase) -> None:
    layout = _narrow(run_bits=2)  # runs 1..3
    generator = make_generator(layout, RunIdSource(counter_db))
    assert len(set(generator.take(24))) == 24
    with pytest.raises(LayoutExhausted, match="used all 3 run ids"):
        generator()


def test_a_layout_with_a_clock_is_refused(counter_db: DbApiDatabase) -> None:
    with pytest.raises(NodeError, match="without a timestamp"):
        RunIdSource(counter_db).acquire(get_layout("snowflake"))
