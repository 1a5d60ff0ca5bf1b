"""Helpers of the service tests, whose apps run in processes of their own (servers, workers):
the live leases of a database, and a process started until it says it is ready."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa

from idfields.coordination import LeaseInfo, list_leases
from idfields.sqlalchemy_ext import SQLAlchemyDatabase
from idfields.sqlalchemy_ext._coordination import sync_url

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def live_leases(url: str, *, layout: str | None = None, pid: int | None = None) -> list[LeaseInfo]:
    """Live leases in ``url``'s database (async URLs too), of ``layout`` or process ``pid``."""
    engine = sa.create_engine(sync_url(url))
    database = SQLAlchemyDatabase(engine)
    try:
        leases = list_leases(database, layout)
    finally:
        database.dispose()
        engine.dispose()
    return [x for x in leases if x.live and (pid is None or f":{pid}:" in x.holder)]


def start(args: list[str], *, cwd: Path = HERE, ready: str = "node=") -> subprocess.Popen[str]:
    """Start ``args`` (a Python script and its arguments), wait for its ``ready`` line."""
    process = subprocess.Popen(
        [sys.executable, *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=environment(),
    )
    assert process.stdout is not None
    seen: list[str] = []
    for line in process.stdout:
        seen.append(line)
        if line.startswith(ready):
            return process
    process.wait(30)
    raise AssertionError(f"{args[0]} exited with {process.returncode}:\n{''.join(seen)}")


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{HERE}"}
