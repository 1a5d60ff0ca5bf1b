"""The benchmark harness: paired rounds, discovery, skip/fail reporting, verdicts, the docs'
table, and ``python -m benchmarks --quick`` end to end.

No timing is asserted (benchmarks are never timed tests): only that the figures exist, ratios
are the medians of paired rounds, and the generator never ran ahead past its skew bound.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks import Skip
from benchmarks.__main__ import discover, main, run_module
from benchmarks.bench_generator import CALL_PURE, TAKE, ours_name
from benchmarks.docs_page import END, HEADLINE, START, rewrite
from benchmarks.rows import Row, check_rows, judge, make_row
from benchmarks.timing import Paired, lead_row, paired, paired_rows

ROOT = Path(__file__).resolve().parents[1]


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


def test_a_paired_ratio_decides_the_verdict_and_a_miss_names_its_cost() -> None:
    base = _row("base", 100.0)
    ours = _row("ours", 130.0, baseline="base", target=1.2, ratio=1.1, spread=[1.0, 1.4])
    assert judge(ours, [base, ours]).met is True  # the paired median, not 130 / 100
    slow = _row("slow", 150.0, baseline="base", target=1.2, ratio=1.5)
    assert judge(slow, [base, slow]).cost == "+50 ns/ID"
    rate = _row("rate", 800.0, unit="tps", baseline="base", target=0.8, higher_is_better=True,
                ratio=0.5)  # fmt: skip
    base_rate = _row("base", 1000.0, unit="tps")
    assert judge(rate, [base_rate, rate]).cost == "+1,000 us/txn"  # 1 ms a txn at half the rate


def test_paired_alternates_the_order_and_pairs_ratios_within_a_round() -> None:
    seen: list[str] = []
    clock = iter(range(1, 100))

    def measure(name: str) -> float:
        seen.append(name)
        return float(next(clock)) * (2 if name == "b" else 1)

    result = paired(["a", "b", "c"], 4, measure)
    rounds = [seen[i : i + 3] for i in range(0, 12, 3)]
    assert rounds == [["a", "b", "c"], ["a", "c", "b"], ["c", "a", "b"], ["c", "b", "a"]]
    assert all(len(values) == 4 for values in result.values.values())
    assert len(result.load) == 4
    ratios = result.ratios("b", "a")
    rows = {row["name"]: row for row in paired_rows("g", "ns", result, "a", targets={"b": 1.0})}
    assert rows["b"]["ratio"] == pytest.approx(statistics.median(ratios))
    assert rows["b"]["spread"] == [min(ratios), max(ratios)]
    assert rows["b"]["rounds"] == 4 and "ratio" not in rows["a"]
    lead = lead_row("g", "a", ["b", "c", "absent"], result, "ns")
    assert lead is not None and lead["baseline"] in {"b", "c"}


def test_the_fastest_peer_is_picked_on_other_rounds_than_it_is_compared_on() -> None:
    """Two tied peers: "lucky" has the single fastest round of all, but its luck is in the
    rounds used for the comparison. The bar is the peer fastest on the odd rounds ("steady"),
    and the ratio comes from the even rounds alone."""
    values = {
        "ours": [10.0, 10.0, 10.0, 10.0, 10.0, 10.0],
        "lucky": [7.0, 11.0, 7.0, 11.0, 7.0, 11.0],  # median 9.0, fastest on even rounds
        "steady": [10.0, 9.5, 10.0, 9.5, 10.0, 9.5],  # median 9.75, fastest on odd rounds
    }
    result = Paired(values, [1.0] * 6)
    lead = lead_row("g", "ours", ["lucky", "steady"], result, "ns")
    assert lead is not None
    assert lead["baseline"] == "steady"
    assert lead["ratio"] == pytest.approx(1.0)  # 10 / 10 on each even round
    assert lead["rounds"] == 3


def test_the_fastest_peer_of_a_rate_is_the_highest() -> None:
    """Transactions per second: the bar is the peer with the most (Instagram's next_id() over
    HeeRanjID's generate_id() here), and ours is met only at or above it."""
    values = {
        "ours": [900.0, 900.0, 900.0, 900.0],
        "instagram": [950.0, 950.0, 950.0, 950.0],
        "heeranjid": [300.0, 300.0, 300.0, 300.0],
    }
    lead = lead_row(
        "g", "ours", ["instagram", "heeranjid"], Paired(values, [1.0] * 4), "tps",
        higher_is_better=True,
    )  # fmt: skip
    assert lead is not None
    assert lead["baseline"] == "instagram"
    assert lead["higher_is_better"] is True
    peer = make_row("g", "instagram", 950.0, "tps", None)
    assert judge(lead, [lead, peer]).met is False


class _Cycle:
    """Garbage only the cyclic collector frees."""

    def __init__(self) -> None:
        self.me = self


def test_no_measurement_starts_with_the_previous_ones_garbage() -> None:
    """A subject leaving cycles behind: the next starts with nothing left to collect (else the
    collection they make due would land in its run)."""
    owed: list[int] = []

    def measure(name: str) -> float:
        owed.append(gc.collect() if name == "b" else 0)
        if name == "a":
            for _ in range(50):
                _Cycle()
        return 1.0

    gc.collect()
    paired(["a", "b"], 4, measure)
    assert not any(owed)


def test_docs_table_is_rewritten_between_the_markers() -> None:
    report = {
        "environment": {"generated": "2026-01-01T00:00:00+00:00", "python": "3.11",
                        "cpus": 2, "load_average": 1.5},
        "quick": False,
        "modules": [{"module": "bench_x", "status": "skipped", "reason": "no server"}],
        "rows": [_row("base", 100.0), _row("ours", 150.0, baseline="base", target=1.2,
                                           ratio=1.5, spread=[1.4, 1.6])],
    }  # fmt: skip
    page = f"intro\n{START}\nold 208 ns\n{END}\nafter\n"
    text = rewrite(page, report)
    assert text.startswith("intro\n") and text.endswith(f"{END}\nafter\n")
    assert "old 208 ns" not in text and "0 of 1 targets met" in text
    assert "1.50x [1.40-1.60]" in text and "MISSED by 25.0%, +50 ns/ID" in text
    assert "`bench_x` (no server)" in text
    with pytest.raises(ValueError, match="markers"):
        rewrite("no markers here", report)


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


@pytest.mark.slow  # a benchmark run
def test_quick_generator_run_writes_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--quick", "--only", "generator", "--out", str(tmp_path)]) == 0
    assert f"== {CALL_PURE} ==" in capsys.readouterr().out
    report = json.loads((tmp_path / "report.json").read_text())
    assert [m["status"] for m in report["modules"]] == ["ok"]
    rows = {(row["group"], row["name"]): row for row in report["rows"]}
    ours = rows[CALL_PURE, ours_name("snowflake", compiled=False)]
    assert ours["value"] > 0 and ours["rounds"] >= 2 and ours["load"][0] <= ours["load"][1]
    if rows[CALL_PURE, ours["baseline"]]["value"] is not None:  # the peer is installed
        assert ours["spread"][0] <= ours["ratio"] <= ours["spread"][1]
    ahead = rows[TAKE, "largest run-ahead seen"]
    assert 0 < ahead["value"] <= rows[TAKE, "max_skew bound"]["value"]
    markdown = (tmp_path / "report.md").read_text()
    assert "## Targets" in markdown and f"## {TAKE}" in markdown


@pytest.mark.slow
def test_quick_mode_runs_every_module(tmp_path: Path, postgres_url: str, mysql_url: str) -> None:
    """``python -m benchmarks --quick`` end to end: every module ok, or skipped with a reason
    (a peer missing); none failed, and the docs' table builds from its report. The benchmarks
    write to the scratch databases, never to the ones the test URLs name (which may name no
    database at all: ``mysql://root@127.0.0.1:3306``)."""
    servers = {"IDFIELDS_TEST_DATABASE_URL": postgres_url, "IDFIELDS_TEST_MYSQL_URL": mysql_url}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(tmp_path)],
        cwd=ROOT, env={**os.environ, **servers, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    statuses = {m["module"]: m["status"] for m in report["modules"]}
    assert set(statuses) == set(discover()) and "failed" not in statuses.values()
    assert statuses["bench_generator"] == "ok"
    judged = [row for row in report["rows"] if row["target"] is not None]
    assert judged and all(row["met"] in (True, False, None) for row in judged)
    text = rewrite(f"{START}\n{END}\n", report)
    assert "targets met" in text
    headline = rewrite(f"{START}\n{END}\n", report, HEADLINE, targets=False)
    assert "target" not in headline and "MISSED" not in headline and "met" not in headline
    rows = [line for line in headline.splitlines() if line.startswith("| ")][1:]
    groups = [line.removeprefix("| ").split(" | ")[0] for line in rows]
    assert groups and all(group.startswith(HEADLINE) for group in groups)
    assert len(rows) < text.count("\n| ") - 1  # the README's cut leaves groups out


@pytest.mark.parametrize("page", ["docs/reference/benchmarks.md", "README.md"])
def test_the_benchmark_pages_have_the_markers(page: str) -> None:
    """``make bench-docs`` rewrites both pages, which must keep their markers."""
    text = (ROOT / page).read_text(encoding="utf-8")
    assert text.count(START) == 1 and text.count(END) == 1


def test_the_readme_shows_measurements_not_targets() -> None:
    """A reader choosing a key gets what each costs against what; the project's own targets and
    verdicts stay on the reference page."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    generated = readme.split(START, 1)[1].split(END, 1)[0]
    header = next(line for line in generated.splitlines() if line.startswith("| "))
    assert header == "| group | name | value | compared with | ratio [min-max] |"
    assert "targets met" not in readme and "MISSED" not in readme
