"""What the distributions carry: the sdist ships the test suite whole (nothing it imports or
reads left behind), and a build without a C toolchain is a pure wheel, not a platform one."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import shared

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (ROOT / ".git").exists(), reason="builds from a git checkout and compares with git"
    ),
]


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``make dist``: the sdist and the wheel built from it (shared with the fresh-project
    runs of tests/test_docs_fresh.py)."""
    return shared.dist(tmp_path_factory)


def tracked(*paths: str) -> set[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--", *paths], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(listed.stdout.split())


def test_the_sdist_ships_the_whole_suite_and_what_it_reads(dist: tuple[Path, Path]) -> None:
    with tarfile.open(dist[0]) as archive:
        prefix = archive.getnames()[0].split("/")[0] + "/"
        shipped = {name.removeprefix(prefix) for name in archive.getnames()}
    wanted = tracked("tests", "docs", "benchmarks", "pgext", "Makefile", "mkdocs.yml", "README.md")
    assert wanted - shipped == set()
    assert {"tests/conftest.py", "tests/databases.py", "tests/django_project/settings.py"} <= (
        shipped
    )


def test_a_build_without_a_compiler_is_a_pure_wheel(
    dist: tuple[Path, Path], tmp_path: Path
) -> None:
    """The sdist built where ``CC=false``: the compiler probe fails, so the wheel declares no
    extension (what pip makes of the sdist on a machine without a C toolchain)."""
    with tarfile.open(dist[0]) as archive:
        archive.extractall(tmp_path, filter="data")
    (source,) = tmp_path.iterdir()
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", "out", "."],
        cwd=source,
        env={**os.environ, "CC": "false"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = (source / "out").iterdir()
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name


def test_the_wheel_ships_no_c_source(dist: tuple[Path, Path]) -> None:
    """The sdist carries ``_speedups.c`` to build from; a wheel carries what it built, not that."""
    with zipfile.ZipFile(dist[1]) as archive:
        sources = [name for name in archive.namelist() if name.endswith((".c", ".h"))]
    assert sources == []


@pytest.mark.parametrize("artifact", ["sdist", "wheel"])
def test_make_dist_builds_an_sdist_and_a_wheel_that_install_and_name_their_core(
    dist: tuple[Path, Path], artifact: str, tmp_path: Path
) -> None:
    """``make dist``: each installs in a clean venv (no checkout on the path, cwd elsewhere)
    and says which core it runs; on this machine, with a C compiler, the compiled one."""
    sdist, wheel = dist
    assert "-py3-none-any" not in wheel.name, "a platform wheel carries the compiled core"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "IDFIELDS_PURE_PYTHON")}
    python = shared.venv(tmp_path / "venv", [str(sdist if artifact == "sdist" else wheel)], env)
    core = subprocess.run(
        [python, "-m", "idfields", "--version"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert core.stdout.startswith("idfields ") and "compiled core" in core.stdout, core.stdout
