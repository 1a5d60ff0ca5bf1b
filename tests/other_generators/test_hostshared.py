"""The host-shared generator: one node for all processes of a host, through one state file."""

from __future__ import annotations

import itertools
import os
import signal
import time
from array import array
from pathlib import Path

import pytest
from othergen_support import FORK, run_processes

from idfields.errors import ClockMovedBackwards, NodeError, NodeNotConfigured
from idfields.hostshared import FILE_SIZE, HostSharedGenerator
from idfields.layouts import CHRONICLE, SNOWFLAKE


def _increasing(ids: list[int] | array[int]) -> bool:
    return all(a < b for a, b in itertools.pairwise(ids))


class FakeClock:
    def __init__(self) -> None:
        self.now = time.time_ns()
        self.slept: list[float] = []

    def __call__(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += round(seconds * 1e9)


def test_chronicle_ids_read_as_the_time_with_the_host_last(tmp_path: Path) -> None:
    generator = HostSharedGenerator("chronicle", node=28, path=tmp_path / "state")
    before = time.time_ns()
    value = generator()
    assert value % 100 == 28
    # ns since 1970, last digits the host; a new file starts max_skew (1 s) ahead of the clock
    assert before - 100 <= value <= time.time_ns() + 1_000_000_100
    assert CHRONICLE.decode(value).values["host"] == 28
    batch = generator.take(1000)  # one 100 ns tick each: runs ahead 100 us at most
    assert _increasing([value, *batch]) and {i % 100 for i in batch} == {28}


def test_processes_on_one_file_share_one_sequence(tmp_path: Path) -> None:
    """Two generators on one file have two open files, so flock separates them like processes."""
    path = tmp_path / "state"
    first = HostSharedGenerator("snowflake", node=7, path=path)
    second = HostSharedGenerator("snowflake", node=7, path=path)
    ids = [gen() for _ in range(2000) for gen in (first, second)]
    ids += second.take(5000) + first.take(3)
    assert _increasing(ids)  # one shared position: strictly increasing in issue order
    assert {SNOWFLAKE.decode(i).values["node"] for i in ids} == {7}


def test_a_clock_step_back_runs_ahead_then_refuses(tmp_path: Path) -> None:
    clock = FakeClock()
    generator = HostSharedGenerator(
        "snowflake", node=1, path=tmp_path / "state", clock=clock, sleep=clock.sleep
    )
    generator()  # a new file starts max_skew ahead (its first ID waits a tick)
    clock.now += 1_100_000_000  # the file has been in use for a while
    clock.slept.clear()
    before = generator.take(10)
    clock.now -= 500_000_000  # half a second back: within max_skew, carry on
    after = [generator() for _ in range(5000)]  # more than a tick: runs one tick ahead
    assert _increasing(before + after) and clock.slept == []
    assert (
        SNOWFLAKE.decode(after[-1]).values["timestamp"]
        == SNOWFLAKE.decode(before[0]).values["timestamp"] + 1
    )
    clock.now -= 5_000_000_000
    with pytest.raises(ClockMovedBackwards, match=r"5\.50"):
        generator()


def test_the_file_refuses_another_node_or_layout(tmp_path: Path) -> None:
    path = tmp_path / "state"
    HostSharedGenerator("snowflake", node=3, path=path)()
    with pytest.raises(NodeError, match="belongs to node 3, but this process was given node 4"):
        HostSharedGenerator("snowflake", node=4, path=path)
    with pytest.raises(NodeError, match="another layout"):
        HostSharedGenerator("snowflake_js", node=3, path=path)
    other = tmp_path / "other"
    other.write_bytes(b"x" * 10)
    with pytest.raises(NodeError, match="not an idfields host state file"):
        HostSharedGenerator("snowflake", node=3, path=other)


def test_the_node_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("IDFIELDS_HOST_ID", raising=False)
    with pytest.raises(NodeNotConfigured, match="IDFIELDS_HOST_ID"):
        HostSharedGenerator("chronicle", path=tmp_path / "state")
    monkeypatch.setenv("IDFIELDS_HOST_ID", "42")
    assert HostSharedGenerator("chronicle", path=tmp_path / "state")() % 100 == 42
    with pytest.raises(NodeError, match="one Node field"):
        HostSharedGenerator("decimal", node=1, path=tmp_path / "d")


def test_a_damaged_slot_falls_back_to_the_other(tmp_path: Path) -> None:
    path = tmp_path / "state"
    generator = HostSharedGenerator("snowflake", node=1, path=path)
    issued = generator.take(3)
    generator.take(3)  # the two slots: the state after each take
    data = bytearray(path.read_bytes())
    assert len(data) == FILE_SIZE
    for offset in (24, 48):  # the two 24-byte slots after the header: damage one at a time
        damaged = bytearray(data)
        damaged[offset + 8 : offset + 16] = b"\xff" * 8
        path.write_bytes(damaged)
        assert generator() > issued[-1]  # the other slot holds an earlier, intact state
        path.write_bytes(data)
    path.write_bytes(data[:24] + b"\x00" * 48)
    with pytest.raises(NodeError, match="both state slots"):
        generator()


def _issue(index: int, path: str, count: int, inherited: HostSharedGenerator) -> list[int]:
    """A worker: every other one uses the generator it inherited through fork."""
    generator = inherited if index % 2 else HostSharedGenerator("snowflake", node=5, path=path)
    return [generator() for _ in range(count)]


def _issue_to_file(path: str, out: str, count: int) -> None:
    generator = HostSharedGenerator("snowflake", node=5, path=path)
    with open(out, "ab") as sink:
        for _ in range(count // 1000):
            array("q", [generator() for _ in range(1000)]).tofile(sink)
            sink.flush()


@pytest.mark.slow
def test_eight_processes_share_one_node(tmp_path: Path) -> None:
    path = str(tmp_path / "state")
    parent = HostSharedGenerator("snowflake", node=5, path=path)
    start = parent()
    per_process = run_processes(8, _issue, path, 100_000, parent)
    everything = [i for ids in per_process for i in ids]
    assert len(everything) == 800_000 and len(set(everything)) == 800_000
    assert all(_increasing(ids) and ids[0] > start for ids in per_process)
    assert parent() > max(everything)


def _size(path: str) -> int:
    return os.path.getsize(path) if os.path.exists(path) else 0


@pytest.mark.slow
def test_a_killed_process_restarts_without_repeats(tmp_path: Path) -> None:
    path = str(tmp_path / "state")
    outs = [str(tmp_path / f"ids{i}") for i in range(5)]
    workers = [FORK.Process(target=_issue_to_file, args=(path, out, 100_000)) for out in outs[:4]]
    for worker in workers:
        worker.start()
    victim = workers[0]
    deadline = time.monotonic() + 60
    while _size(outs[0]) < 8 * 20_000:  # the victim has issued 20,000 IDs by then
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.kill(victim.pid or 0, signal.SIGKILL)  # most likely in the middle of an update
    victim.join()
    assert victim.exitcode == -signal.SIGKILL
    killed = array("q", Path(outs[0]).read_bytes())
    restarted = FORK.Process(target=_issue_to_file, args=(path, outs[4], 50_000))
    restarted.start()
    for worker in [*workers[1:], restarted]:
        worker.join(120)
        assert worker.exitcode == 0
    per_process = [array("q", Path(out).read_bytes()) for out in outs]
    everything = [i for ids in per_process for i in ids]
    assert len(everything) == len(killed) + 350_000 and len(set(everything)) == len(everything)
    assert all(_increasing(ids) for ids in per_process)
    assert per_process[4][0] > killed[-1]
