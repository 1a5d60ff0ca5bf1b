"""What the distributions carry: the sdist ships the test suite whole (nothing it imports or
reads left behind), and a build without a C toolchain is a pure wheel, not a platform one."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (ROOT / ".git").exists(), reason="builds from a git checkout and compares with git"
    ),
]


def tracked(*paths: str) -> set[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--", *paths], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(listed.stdout.split())


def build(kind: str, out: Path, env: dict[str, str] | None = None) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "build", f"--{kind}", "--no-isolation", "--outdir", str(out)],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (built,) = out.iterdir()
    return built


def test_the_sdist_ships_the_whole_suite_and_what_it_reads(tmp_path: Path) -> None:
    sdist = build("sdist", tmp_path)
    with tarfile.open(sdist) as archive:
        prefix = archive.getnames()[0].split("/")[0] + "/"
        shipped = {name.removeprefix(prefix) for name in archive.getnames()}
    wanted = tracked("tests", "docs", "benchmarks", "pgext", "Makefile", "mkdocs.yml", "README.md")
    assert wanted - shipped == set()
    assert {"tests/conftest.py", "tests/databases.py", "tests/django_project/settings.py"} <= (
        shipped
    )


def test_a_build_without_a_compiler_is_a_pure_wheel(tmp_path: Path) -> None:
    """``CC=false``: the compiler probe fails, so the wheel declares no extension."""
    wheel = build("wheel", tmp_path, {"CC": "false"})
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
