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

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("checkout"),  # one build at a time writes build/ in the checkout
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


def test_the_wheel_ships_no_c_source(tmp_path: Path) -> None:
    """The sdist carries ``_speedups.c`` to build from; a wheel carries what it built, not that."""
    wheel = build("wheel", tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        sources = [name for name in archive.namelist() if name.endswith((".c", ".h"))]
    assert sources == []


def _fresh_venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    return where / "bin" / "python"


def test_make_dist_builds_an_sdist_and_a_wheel_that_install_and_name_their_core(
    tmp_path: Path,
) -> None:
    """``make dist``: both install in a clean venv (no checkout on the path, cwd elsewhere) and
    say which core they run; on this machine, with a C compiler, the compiled one."""
    out = tmp_path / "dist"
    done = subprocess.run(
        ["make", "dist", f"DIST={out}", f"PYTHON={sys.executable}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    sdists, wheels = list(out.glob("*.tar.gz")), list(out.glob("*.whl"))
    assert len(sdists) == len(wheels) == 1, list(out.iterdir())
    assert "-py3-none-any" not in wheels[0].name, "a platform wheel carries the compiled core"
    for artifact in out.iterdir():
        python = _fresh_venv(tmp_path / f"venv-{artifact.suffix}")
        env = {
            k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "IDFIELDS_PURE_PYTHON")
        }
        subprocess.run(
            [python, "-m", "pip", "install", "-q", str(artifact)],
            check=True,
            env=env,
            timeout=600,
        )
        core = subprocess.run(
            [python, "-m", "idfields", "--version"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert core.stdout.startswith("idfields ") and "compiled core" in core.stdout, (
            artifact.name,
            core.stdout,
        )
