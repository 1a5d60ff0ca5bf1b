"""The comparison's report says what it measured, consistently: ties only where the runs cannot
tell two strategies apart, no signed zeros, one unit per panel, every insert path and the WAL
drawn, the recent-rows query's method shown, and on MariaDB a "table" that is the clustered key
(as the caption says) under the server's own name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from idfields.compare._report import (
    CAPTIONS,
    RANGE,
    SCAN,
    Report,
    chart_title,
    panels,
    text_table,
    verdict,
    write_outputs,
)
from idfields.compare._runner import run_comparison


def report() -> Report:
    made = Report(
        "postgresql",
        1000,
        ["auto", "snowflake", "uuid4"],
        {"auto": "IDENTITY (baseline)", "snowflake": "snowflake (app)", "uuid4": "UUIDv4"},
        repeat=3,
        product="PostgreSQL 15.20",
    )
    for path in ("single", "batch", "copy"):
        for rate in (100.0, 200.0, 300.0):
            made.add_timing("auto", path, rate)
        for rate in (90.0, 95.0, 100.0):  # median 0.475x the baseline's; ranges touch at 100
            made.add_timing("snowflake", path, rate)
        for rate in (150.0, 190.0, 250.0):  # each median within the other's runs
            made.add_timing("uuid4", path, rate)
    for name, leading in (("auto", True), ("snowflake", True), ("uuid4", False)):
        made.metrics[name] = {
            "pk_index_bytes": 286_720,
            "leaf_density": 0.9,
            "table_bytes": 286_720,
            "wal_bytes": 1_048_576,
            "correlation": -0.0001 if name == "uuid4" else 1.0,
            "range_query_s": 0.0012,
            "range_query_rows": 100,
            "range_query_by": RANGE if leading else SCAN,
        }
    return made


def test_a_tie_needs_each_median_within_the_others_runs() -> None:
    made = report()
    assert made.ratio("snowflake", "batch") == pytest.approx(0.475)
    assert not made.tie("snowflake", "batch")  # overlapping ranges alone said "tie"
    assert made.tie("uuid4", "batch")
    assert "0.47x tie" not in text_table(made.to_dict())


def test_no_signed_zero_and_one_unit_per_panel() -> None:
    made = report()
    shown = text_table(made.to_dict())
    assert "-0.000" not in shown and "0.000" in shown
    by_caption = {panel.caption: panel for panel in panels(made)}
    index = by_caption["index"]
    assert "KiB" in index.title and CAPTIONS["index"].startswith("KiB")
    assert index.texts["size"] == ["280", "280", "280"]  # KiB, no "280.00"
    assert by_caption["order"].texts["order"][2] == "0.00"


def test_every_insert_path_and_the_wal_are_drawn() -> None:
    by_caption = {panel.caption: panel for panel in panels(report())}
    assert set(by_caption["speed"].series) == {"single-row", "batch", "COPY"}
    assert by_caption["wal"].texts["wal"] == ["1,024", "1,024", "1,024"]


def test_the_recent_rows_panel_says_range_or_scan() -> None:
    texts = {panel.caption: panel for panel in panels(report())}["recent"].texts["recent"]
    assert texts == [f"1.20 ({RANGE})", f"1.20 ({RANGE})", f"1.20 ({SCAN})"]
    assert f"({SCAN})" in text_table(report().to_dict())


def test_the_title_names_the_server_without_nested_brackets() -> None:
    title = chart_title(report())
    assert "PostgreSQL 15.20" in title
    for line in title.splitlines():
        depth = deepest = 0
        for char in line:
            depth += {"(": 1, ")": -1}.get(char, 0)
            deepest = max(deepest, depth)
        assert deepest <= 1, line


@pytest.mark.mysql
def test_mariadb_table_is_the_clustered_key_under_its_own_name(
    fresh_database: Callable[[str], str], tmp_path: Path
) -> None:
    made = run_comparison(fresh_database("mysql"), rows=300, progress=False, repeat=1)
    document = made.to_dict()
    assert document["product"].startswith("MariaDB ")
    assert "rows on MariaDB " in text_table(document)
    for entry in document["strategies"]:
        metrics = entry["metrics"]
        assert metrics["table_bytes"] == metrics["pk_index_bytes"], entry["name"]


def test_a_panel_the_database_cannot_measure_is_left_out() -> None:
    """SQLite and MariaDB have no WAL figure: no panel of n/a bars."""
    made = report()
    for metrics in made.metrics.values():
        metrics["wal_bytes"] = None
    assert "wal" not in {panel.caption for panel in panels(made)}
    assert "wal" in {panel.caption for panel in panels(report())}


def test_every_speed_bar_carries_its_runs_spread() -> None:
    made = report()
    speed = {panel.caption: panel for panel in panels(made)}["speed"]
    assert set(speed.spans) == set(speed.series)
    assert speed.spans["single-row"][1] == made.ratio_range("snowflake", "single")
    assert speed.spans["COPY"][1] == pytest.approx((0.45, 0.5))


def test_the_chart_answers_which_to_use(tmp_path: Path) -> None:
    text = verdict(report())
    assert text.startswith("Which to use: UUIDv4 inserts fastest"), text
    assert "0.95x IDENTITY (baseline)" in text and "within the runs' spread on 3" in text
    assert "UUIDv4 scatter inserts" in text and "1.00x its size" in text
    pytest.importorskip("matplotlib")
    _, chart = write_outputs(report(), tmp_path)
    assert chart.stat().st_size > 10_000
