"""The Django side of the coordination, each database in a Django process of its own:
migrations, the management commands, and the private connection of the adapter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import databases
import pytest

HERE = Path(__file__).parent


@pytest.fixture(
    params=[
        pytest.param("postgresql", marks=pytest.mark.postgres),
        pytest.param("mysql", marks=pytest.mark.mysql),
        "sqlite",
    ]
)
def django_db_target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database of its own (a fresh one, so migrate starts from nothing) for one test."""
    if request.param == "sqlite":
        yield str(tmp_path / "django.sqlite3")
        return
    server = request.getfixturevalue(
        "postgres_url" if request.param == "postgresql" else "mysql_url"
    )
    with databases.scratch_database(server) as url:
        yield url


def django(target: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "COORDINATION_TEST_DB": target,
        "DJANGO_SETTINGS_MODULE": "coordination_settings",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent), str(HERE.parents[1])]),
    }
    env.pop("IDFIELDS_LAUNCH_ID", None)
    done = subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"{args} exited {done.returncode}: {done.stderr[-2000:]}")
    return done


def manage(target: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return django(target, "-m", "django", *args, check=check)


@pytest.mark.slow
def test_migrations_commands_and_private_connection(django_db_target: str) -> None:
    target = django_db_target
    assert (
        "No changes detected"
        in manage(target, "makemigrations", "--check", "--dry-run", "idfields").stdout
    )
    manage(target, "migrate", "idfields", "-v0")

    failed = django(target, str(HERE / "coordination_django_worker.py"), "decimal", check=False)
    assert failed.returncode != 0 and "manage.py idfields_launch --label" in failed.stderr
    launches = [
        int(manage(target, "idfields_launch", "--label", f"v{i}").stdout.split()[1]) for i in (1, 2)
    ]
    assert launches == [launches[0], launches[0] + 1]

    report = json.loads(
        django(target, str(HERE / "coordination_django_worker.py"), "decimal").stdout
    )
    assert report["same_generator"] is True
    first, second = report["ids"]
    assert first < second
    decimal = report["decimal"]
    assert decimal % 100_000 == launches[1]  # the latest launch, a fresh generator id in it
    child_node, child_id = report["child"]
    assert child_node != report["node"] and child_id not in report["ids"]
    # The lease taken inside the rolled-back request survived it; the parent's still holds.
    assert any(
        holder.startswith(f"{os.uname().nodename[:200]}:{report['pid']}:")
        for holder in report["live_holders"]
    )
    assert report["rows"] >= 2

    listing = manage(target, "idfields_nodes").stdout
    assert "snowflake" in listing and "nodes free" in listing
    assert "released leases not shown" in listing  # the worker exited cleanly: released at exit
    listed = manage(target, "idfields_nodes", "--all").stdout.splitlines()
    assert any(line.endswith("released") for line in listed)
    decimal_room = manage(target, "idfields_nodes", "--layout", "decimal").stdout
    assert f"launch {launches[1]}, {99_999 - launches[1]:,} launch ids left" in decimal_room
    assert "99,999 of 100,000 generator ids left" in decimal_room
    bad = manage(target, "idfields_launch", "--label", "x" * 101, check=False)
    assert bad.returncode != 0 and "keep it <= 100" in bad.stderr
