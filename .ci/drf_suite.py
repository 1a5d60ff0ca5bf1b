"""Django REST framework's own test suite with our keys: no test lost that BigAutoField passes.

Downloads the DRF sdist (it ships tests/ and their pytest conftest), and runs its suite with
pytest as its runtests.py does, on SQLite and on PostgreSQL, on each once with ``BigAutoField``
and once with ``SnowflakeAutoField`` and ``idfields.django_app`` installed, as a project adds
them. Its conftest configures settings in code, so the copy run here sets the database, the
default key and our app after its ``settings.configure()``, then runs the system checks as a
project's ``runserver`` and ``test`` do (pytest-django does not): an error of ours fails the gate
(DRF's own test models have errors of Django's, which its suite never meets).
Fails on any test that passes on the first run and not on the second.

    python .ci/drf_suite.py [--work DIR] [--backend sqlite|postgresql]...

PostgreSQL is ``$IDFIELDS_TEST_DATABASE_URL`` (a server: pytest-django makes the databases).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import suites

# The release line that supports Django 5.2 LTS, the Django tested here.
DRF = "djangorestframework==3.16.1"

SERVERS = {
    "sqlite": "sqlite://",
    "postgresql": os.environ.get(
        "IDFIELDS_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/"
    ),
}

# Called by the conftest copy between settings.configure() and django.setup().
OVERRIDES = """\
import os

import suites


def apply(settings):
    url, name = os.environ["IDFIELDS_SUITE_URL"], os.environ["IDFIELDS_SUITE_DB"]
    settings.DATABASES = {
        "default": suites.database(url, name),
        "secondary": suites.database(url, name + "_secondary"),
    }
    settings.DEFAULT_AUTO_FIELD = os.environ["IDFIELDS_SUITE_AUTO_FIELD"]
    if settings.DEFAULT_AUTO_FIELD.startswith("idfields."):
        settings.INSTALLED_APPS += ("idfields.django_app",)
        settings.IDFIELDS = {"NODE_SOURCE": "lease"}


def check():
    from django.core import checks

    ours = [m for m in checks.run_checks() if m.id.startswith("idfields.") and m.is_serious()]
    with open(os.environ["IDFIELDS_SUITE_CHECKS"], "w") as out:
        out.writelines(f"{message}\\n" for message in ours)
"""

ANCHOR = "    django.setup()\n"


def prepare(root: Path) -> None:
    """The overrides module and ``tests/conftest.py`` calling it (from the sdist's original)."""
    (root / "idfields_drf_overrides.py").write_text(OVERRIDES)
    original = root / "tests" / "conftest.py.orig"
    if not original.exists():
        original.write_text((root / "tests" / "conftest.py").read_text())
    text = original.read_text()
    if text.count(ANCHOR) != 1:
        raise SystemExit("DRF's tests/conftest.py has no single django.setup() line")
    ours = (
        "    import idfields_drf_overrides\n\n"
        "    idfields_drf_overrides.apply(settings)\n"
        f"{ANCHOR}"
        "    idfields_drf_overrides.check()\n"
    )
    (root / "tests" / "conftest.py").write_text(text.replace(ANCHOR, ours))


def gate(backend: str, root: Path, results: Path, site: str) -> list[str]:
    """Run DRF's suite on ``backend`` with BigAutoField, then ours; the tests lost."""
    outcomes = {}
    for tag, auto_field in (("base", suites.BASELINE), ("ours", suites.OURS)):
        report = results / f"drf-{backend}-{tag}.xml"
        checks = report.with_suffix(".checks")
        checks.unlink(missing_ok=True)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")])),
            "IDFIELDS_SUITE_URL": SERVERS[backend],
            "IDFIELDS_SUITE_DB": f"idfields_drf_suite_{os.getpid()}_{tag}",
            "IDFIELDS_SUITE_AUTO_FIELD": auto_field,
            "IDFIELDS_SUITE_CHECKS": str(checks),
        }
        # runtests.py's own options; pytest-randomly (if installed) would reorder the suite.
        command = ["-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-q"]
        command += ["--tb=short", "-ra", f"--junitxml={report}", "tests"]
        outcomes[tag] = suites.run(command, root, env, report)
    print(f"Django REST framework's suite on {backend}:")
    lost = suites.lost_tests(outcomes["base"], outcomes["ours"], {})
    if errors := checks.read_text():
        print(f"the system checks stop a project with our app:\n{errors}")
        lost.append("the system checks")
    return lost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/idfields-framework-suites"))
    parser.add_argument("--backend", choices=list(SERVERS), action="append")
    args = parser.parse_args()
    root = suites.sdist(DRF, args.work)
    prepare(root)
    # DRF's test requirements (pytest-django is ours too), and optional packages its tests use
    # when present (requirements-optionals.txt).
    optional = {"yaml": "PyYAML", "inflection": "inflection", "markdown": "Markdown"}
    site = str(suites.requirements({**optional, "pytz": "pytz", "pygments": "Pygments"}, args.work))
    results = args.work / "results"
    results.mkdir(exist_ok=True)
    return suites.each_backend(
        "DRF's suite", args.backend or list(SERVERS), lambda b: gate(b, root, results, site)
    )


if __name__ == "__main__":
    sys.exit(main())
