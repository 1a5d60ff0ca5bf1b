"""``idfields compare``: AUTO_INCREMENT against k-sorted IDs (app and DB side) and UUIDs.

Core side: DB-API drivers only, no Django or SQLAlchemy. :func:`run_comparison` is the API;
:func:`add_compare_command` / :func:`run_cli` plug it into a command line.
"""

from __future__ import annotations

from idfields.compare._cli import add_compare_command, run_cli
from idfields.compare._report import Report
from idfields.compare._runner import run_comparison

__all__ = ["Report", "add_compare_command", "run_cli", "run_comparison"]
