"""The benchmark harness: discovery, skip/fail reporting, verdicts, and a quick real run.

No timing is asserted (benchmarks are never timed tests): only that the figures exist, ratios
are computed from them, and the generator never ran ahead past its skew bound.
"""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks import Skip
from benchmarks.__main__ import discover, main, run_module
from benchmarks.bench_generator import ours_name
from benchmarks.rows import Row, check_rows, judge


def _row(name: str, value: float | None, **extra: object) -> Row:
    row: Row = {
        "group": "g",
        "name": name,
        "value": value,
        "unit": "ns/ID",
        "baseline": None,
        "target": None,
    }
    row.update(extra)  # type: ignore[typeddict-item]
    return row


def test_judge_lower_and_higher_is_better() -> None:
    base = _row("base", 100.0)
    slow = _row("slow", 130.0, baseline="base", target=1.0)
    fast = _row("fast", 90.0, baseline="base", target=1.0)
    rate = _row("rate", 90.0, baseline="base", target=0.95, higher_is_better=True)
    group = [base, slow, fast, rate]
    missed = judge(slow, group)
    assert missed.ratio == pytest.approx(1.3) and missed.met is False
    assert missed.text == "MISSED by 30.0%"
    assert judge(fast, group).met is True
    assert judge(rate, group).text == "MISSED by 5.3%"
    assert judge(_row("x", 1.0, baseline="absent"), group).text == "baseline 'absent' not measured"


def test_check_rows_names_the_bad_row() -> None:
    with pytest.raises(ValueError, match="needs key 'target'"):
        check_rows([{"group": "g", "name": "n", "unit": "s", "value": 1.0, "baseline": None}])


def _fake(monkeypatch: pytest.MonkeyPatch, name: str, run: Callable[..., object]) -> str:
    module = types.ModuleType(f"benchmarks.{name}")
    module.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, f"benchmarks.{name}", module)
    return name


def _raises(error: BaseException) -> Callable[..., object]:
    def run(quick: bool = False) -> object:
        raise error

    return run


@pytest.mark.parametrize(
    ("error", "status", "reason"),
    [
        (ModuleNotFoundError("no", name="somepeer"), "skipped", "somepeer is not installed"),
        (ConnectionRefusedError(111, "refused"), "skipped", "server unavailable"),
        (Skip("needs redis"), "skipped", "needs redis"),
        (ModuleNotFoundError("no", name="idfields.gone"), "failed", "ModuleNotFoundError"),
        (ZeroDivisionError("bug"), "failed", "ZeroDivisionError: bug"),
    ],
)
def test_module_errors_are_reported_not_raised(
    monkeypatch: pytest.MonkeyPatch, error: BaseException, status: str, reason: str
) -> None:
    rows, result = run_module(_fake(monkeypatch, "bench_fake", _raises(error)), quick=True)
    assert rows == []
    assert (result.status, result.module) == (status, "bench_fake")
    assert reason in result.reason


def test_discovery_finds_the_generator_bench() -> None:
    found = discover()
    assert "bench_generator" in found
    assert all(name.startswith("bench_") for name in found)


def test_quick_generator_run_writes_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--quick", "--only", "generator", "--out", str(tmp_path)]) == 0
    assert "== generator: single call ==" in capsys.readouterr().out
    report = json.loads((tmp_path / "report.json").read_text())
    assert [m["status"] for m in report["modules"]] == ["ok"]
    rows = {(row["group"], row["name"]): row for row in report["rows"]}
    ours = rows["generator: single call", ours_name("snowflake", compiled=False)]
    peer = rows["generator: single call", ours["baseline"]]
    if peer["value"] is not None:
        assert ours["ratio"] == pytest.approx(ours["value"] / peer["value"])
    ahead = rows["generator: take(100_000) sustained", "largest run-ahead seen"]
    assert (
        0 < ahead["value"] <= rows["generator: take(100_000) sustained", "max_skew bound"]["value"]
    )
    assert "## generator: take(100_000) sustained" in (tmp_path / "report.md").read_text()
