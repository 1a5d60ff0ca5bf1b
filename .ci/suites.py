"""What the framework-suite CI steps share: fetch a package's sdist, run a Django test suite
recording each test's outcome, and compare a run on BigAutoField with a run on our keys.

A test that passes on BigAutoField and not with idfields is a regression of the drop-in, unless
listed as expected (a test whose own model stores our keys in a 32-bit column). A failure that
does not repeat when the lost tests run again on their own (a timing test on a busy machine)
is reported and forgiven.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from xml.etree import ElementTree

BASELINE = "django.db.models.BigAutoField"
OURS = "idfields.django_app.fields.SnowflakeAutoField"
HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# Written next to the suite's settings; TEST_RUNNER = "idfields_suite_runner.RecordingRunner".
RUNNER = '''\
"""A DiscoverRunner that writes each test's outcome to $IDFIELDS_SUITE_RESULTS (JSON)."""

import importlib.util
import json
import os
import unittest

from django.test.runner import DiscoverRunner


class RecordingResult(unittest.TextTestResult):
    outcomes = {}

    def _record(self, test, outcome):
        if RecordingResult.outcomes.get(test.id(), "ok") == "ok":
            RecordingResult.outcomes[test.id()] = outcome

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "ok")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "fail")

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "error")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skip")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record(test, "ok")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, "fail")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._record(test, "fail")


class RecordingRunner(DiscoverRunner):
    def get_resultclass(self):
        return RecordingResult

    def suite_result(self, suite, result, **kwargs):
        with open(os.environ["IDFIELDS_SUITE_RESULTS"], "w") as out:
            json.dump(RecordingResult.outcomes, out, indent=0, sort_keys=True)
        return super().suite_result(suite, result, **kwargs)
'''


def database(url: str, name: str) -> dict[str, Any]:
    """A ``DATABASES`` entry for a server URL (``postgresql://``, ``mysql://``) and a database
    name; for ``sqlite://``, Django's SQLite backend, whose test databases are in memory.
    Settings of the suites import this (the runs put this folder on their path)."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}
    return {
        "ENGINE": f"django.db.backends.{parts.scheme}",
        "NAME": name,
        "USER": parts.username or "root",
        "PASSWORD": parts.password or "",
        "HOST": parts.hostname or "127.0.0.1",
        "PORT": parts.port or "",
    }


def sdist(requirement: str, work: Path, wanted: str = "") -> Path:
    """The extracted sdist of ``requirement`` (downloaded once into ``work``); with ``wanted``,
    the newest release whose sdist holds that path (some packages prune their tests)."""
    work.mkdir(parents=True, exist_ok=True)
    name, _, version = requirement.partition("==")
    candidates = [version] if version else _versions(name)
    for candidate in candidates:
        archive = _download(f"{name}=={candidate}", work)
        root = work / archive.name.removesuffix(".tar.gz")
        if not root.exists():
            with tarfile.open(archive) as opened:
                opened.extractall(work, filter="data")
        if not wanted or (root / wanted).exists():
            return root
        print(f"{archive.name} ships no {wanted}/: trying the release before", flush=True)
    raise SystemExit(f"no sdist of {name} ships {wanted}/")


def _versions(name: str) -> list[str]:
    """Releases of ``name`` installable here, newest first (``pip index versions``)."""
    found = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", name],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in found.stdout.splitlines():
        if line.strip().startswith("Available versions:"):
            return [v.strip() for v in line.split(":", 1)[1].split(",")]
    raise SystemExit(f"pip index versions {name} listed no versions:\n{found.stdout}")


def _download(requirement: str, work: Path) -> Path:
    name, _, version = requirement.partition("==")
    stems = {f"{name}-{version}", f"{name.replace('-', '_')}-{version}"}
    for stem in stems:
        if (work / f"{stem}.tar.gz").exists():
            return work / f"{stem}.tar.gz"
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:"]
    subprocess.run([*pip, "--no-deps", "--dest", str(work), requirement], check=True)
    return next(work / f"{stem}.tar.gz" for stem in stems if (work / f"{stem}.tar.gz").exists())


def requirements(modules: Mapping[str, str], work: Path) -> Path:
    """A folder for PYTHONPATH holding the suite's own test requirements (``module: package``)
    that this interpreter lacks, installed there rather than into the environment."""
    target = work / "site-packages"
    missing = [
        package
        for module, package in modules.items()
        if importlib.util.find_spec(module) is None and not (target / module).exists()
    ]
    if missing:
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target)]
        subprocess.run([*pip, "--no-deps", *missing], check=True)
    return target


def run(command: Sequence[str], cwd: Path, env: Mapping[str, str], results: Path) -> dict[str, str]:
    """Run a suite whose TEST_RUNNER records into ``results``; the outcome of each test."""
    results.unlink(missing_ok=True)
    print(f"== {' '.join(command)}", flush=True)
    full_env = {**env, "IDFIELDS_SUITE_RESULTS": str(results), "PYTHONPATH": _path(cwd, env)}
    subprocess.run([sys.executable, *command], cwd=cwd, env=full_env, check=False)
    if not results.exists():
        raise SystemExit(f"{' '.join(command)} wrote no results: see its output above")
    if results.suffix == ".xml":
        return junit_outcomes(results)
    outcomes: dict[str, str] = json.loads(results.read_text())
    return outcomes


def junit_outcomes(report: Path) -> dict[str, str]:
    """The outcome of each test of a pytest ``--junitxml`` report, named ``module.Class.test``."""
    outcomes = {}
    for case in ElementTree.parse(report).iter("testcase"):
        kinds = {child.tag for child in case}
        outcome = next((k for k in ("error", "failure", "skipped") if k in kinds), "ok")
        name = f"{case.get('classname')}.{case.get('name')}"
        outcomes[name] = {"failure": "fail", "skipped": "skip"}.get(outcome, outcome)
    return outcomes


def _path(cwd: Path, env: Mapping[str, str]) -> str:
    """The suite's folder, this project and this folder before the run's own PYTHONPATH."""
    folders = [str(cwd), str(REPO), str(HERE), env.get("PYTHONPATH")]
    return os.pathsep.join(filter(None, folders))


def passed(outcomes: Mapping[str, str]) -> set[str]:
    return {test for test, outcome in outcomes.items() if outcome == "ok"}


def lost_tests(
    base: Mapping[str, str], ours: Mapping[str, str], expected: Mapping[str, str]
) -> list[str]:
    """Print the comparison; the tests lost that are not expected to be (``expected`` names a
    test, or a class for all its tests, with a note)."""
    if not passed(base):
        return ["the baseline run: no test passed (see its output above)"]
    lost = sorted(passed(base) - passed(ours))
    print(
        f"BigAutoField: {len(passed(base))} of {len(base)} pass; SnowflakeAutoField: "
        f"{len(passed(ours))} of {len(ours)} pass; lost {len(lost)}"
    )

    def listed(test: str) -> str | None:
        return next((k for k in expected if test == k or test.startswith(f"{k}.")), None)

    keys = [listed(test) for test in lost]
    for key in sorted(set(expected)):
        count = keys.count(key)
        print(
            f"  {key}: {count} expected ({expected[key]})"
            if count
            else f"  {key} is listed as expected but passed: take it off the list"
        )
    unexpected = [test for test, key in zip(lost, keys, strict=True) if key is None]
    for test in unexpected:
        print(f"  {test}: {ours.get(test, 'not run')}")
    return unexpected


def each_backend(suite: str, backends: Iterable[str], gate: Callable[[str], list[str]]) -> int:
    """Run ``gate`` on each backend, timing it; print what each lost; the exit status."""
    lost = {}
    for backend in backends:
        started = time.monotonic()
        lost[backend] = gate(backend)
        print(f"{suite} on {backend}: {time.monotonic() - started:.0f} s", flush=True)
    for backend, tests in lost.items():
        print(f"{suite} on {backend}: {len(tests)} lost {tests}")
    return 1 if any(lost.values()) else 0


def run_script(script: Path, cwd: Path, env: Mapping[str, str]) -> bool:
    """Run a Python script of the harness; whether it exited 0."""
    env = {**env, "PYTHONPATH": _path(cwd, env)}
    done = subprocess.run([sys.executable, str(script)], cwd=cwd, env=env, check=False)
    return done.returncode == 0
