"""The AUTO_INCREMENT comparison (``idfields compare``) as benchmark rows, on PostgreSQL.

Insert rates per path are compared with the identity key (higher is better); the PK index size
with identity's (the k-sorted keys should fill their B-tree like AUTO_INCREMENT does). The full
table, with WAL, leaf density, correlation and the range query, is ``idfields compare --out``.
"""

from __future__ import annotations

from benchmarks.report import run_alone
from benchmarks.rows import Row
from benchmarks.servers import server_url
from idfields.compare import run_comparison

ROWS, QUICK_ROWS = 100_000, 5_000
INDEX_TARGET = 1.01  # issue 8: the k-sorted keys' PK index at most 1% above identity's


def run(quick: bool = False) -> list[Row]:
    report = run_comparison(server_url("postgresql"), rows=QUICK_ROWS if quick else ROWS)
    baseline = report.labels[report.baseline]
    rows: list[Row] = []
    for name in report.strategies:
        label = report.labels[name]
        for path, rate in report.rates.get(name, {}).items():
            rows.append(
                Row(
                    group=f"compare on PostgreSQL: {path} inserts",
                    name=label,
                    value=rate,
                    unit="rows/s",
                    baseline=baseline if name != report.baseline else None,
                    target=None,
                    higher_is_better=True,
                )
            )
        index_bytes = report.metrics.get(name, {}).get("pk_index_bytes")
        rows.append(
            Row(
                group="compare on PostgreSQL: PK index size",
                name=label,
                value=index_bytes,
                unit="bytes",
                baseline=baseline if name != report.baseline else None,
                target=INDEX_TARGET if name != report.baseline and "UUID" not in label else None,
            )
        )
    return rows


if __name__ == "__main__":
    run_alone(run)
