"""Django's own test suite with our keys: a drop-in must lose no test that BigAutoField passes.

Downloads the sdist of the installed Django (the tests are not in the wheel), runs
``tests/runtests.py`` on PostgreSQL for the labels below, once with ``BigAutoField`` and once
with ``SnowflakeAutoField`` (``idfields.django_app`` added to runtests' always-installed apps),
and fails on any test that passes on the first run and not on the second, except those in
``EXPECTED``. Then it runs every idfields system check over every model the whole suite
defines: none may crash.

    python .ci/django_suite.py [--work DIR] [--parallel N] [--url postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import django

LABELS = (
    "basic bulk_create model_inheritance model_inheritance_regress many_to_many m2m_through "
    "generic_relations get_or_create update save_delete_hooks fixtures serializers proxy_models "
    "one_to_one foreign_object select_related prefetch_related custom_pk model_formsets "
    "admin_changelist"
).split()

# Tests whose own models store our 63-bit keys in 32-bit columns: the check named is what a
# project with such a model sees, and the fix is the model's, not ours.
EXPECTED: dict[str, str] = {}

BASELINE = "django.db.models.BigAutoField"
OURS = "idfields.django_app.fields.SnowflakeAutoField"
HERE = Path(__file__).resolve().parent

SETTINGS = '''\
import os
from urllib.parse import urlsplit

_url = urlsplit(os.environ["IDFIELDS_SUITE_URL"])
_name = os.environ["IDFIELDS_SUITE_DB"]


def _db(suffix):
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _name + suffix,
        "USER": _url.username or "postgres",
        "PASSWORD": _url.password or "",
        "HOST": _url.hostname or "127.0.0.1",
        "PORT": _url.port or 5432,
        "TEST": {"NAME": "test_" + _name + suffix},
    }


DATABASES = {"default": _db(""), "other": _db("_other")}
SECRET_KEY = "django_tests_secret_key"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
DEFAULT_AUTO_FIELD = os.environ["IDFIELDS_SUITE_AUTO_FIELD"]
USE_TZ = False
TEST_RUNNER = "idfields_suite_runner.RecordingRunner"
IDFIELDS = {"NODE_SOURCE": "lease"}
'''

RUNNER = '''\
"""A DiscoverRunner that writes each test's outcome to $IDFIELDS_SUITE_RESULTS (JSON)."""

import json
import os
import unittest

from django.test.runner import DiscoverRunner


class RecordingResult(unittest.TextTestResult):
    outcomes = {}

    def _record(self, test, outcome):
        test_id = test.id()
        if RecordingResult.outcomes.get(test_id, "ok") == "ok":
            RecordingResult.outcomes[test_id] = outcome

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

# Imports every model of every test app of Django's suite, then runs the idfields checks.
CHECK_ALL = '''\
import sys
import runtests
from django.core import checks
from idfields.django_app import checks as _checks, key_checks as _key_checks

runtests.setup_run_tests(0, None, None, None)
from django.apps import apps

models = apps.get_models(include_auto_created=True)
messages = []
for check in (_checks.check_models, _checks.check_settings, _key_checks.check_app_key_overrides):
    messages += check(app_configs=None, databases=["default"])
messages += _key_checks.check_database_columns(app_configs=None, databases=[])
for model in models:
    for field in model._meta.get_fields(include_hidden=True):
        if hasattr(field, "check") and type(field).__module__.startswith("idfields"):
            messages += field.check(databases=["default"])
print(f"idfields checks ran over {len(models)} models of Django's suite: {len(messages)} messages")
'''


def sources(work: Path) -> Path:
    """The tests/ directory of the installed Django's sdist, downloaded once into ``work``."""
    version = django.__version__
    root = work / f"django-{version}"
    if not (root / "tests" / "runtests.py").exists():
        work.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:",
             "--no-deps", f"django=={version}", "--dest", str(work)],
            check=True,
        )
        with tarfile.open(work / f"django-{version}.tar.gz") as archive:
            archive.extractall(work, filter="data")
    tests = root / "tests"
    (tests / "idfields_suite_settings.py").write_text(SETTINGS)
    (tests / "idfields_suite_runner.py").write_text(RUNNER)
    (tests / "idfields_suite_checks.py").write_text(CHECK_ALL)
    text = (tests / "runtests.py").read_text()
    anchor = '    "django.contrib.staticfiles",\n]'
    if text.count(anchor) != 1:
        raise SystemExit(f"runtests.py of Django {version} has no ALWAYS_INSTALLED_APPS to extend")
    patched = text.replace(anchor, '    "django.contrib.staticfiles",\n    "idfields.django_app",\n]')
    (tests / "runtests_idfields.py").write_text(patched)
    return tests


def run(tests: Path, script: str, auto_field: str, url: str, parallel: int, tag: str) -> dict[str, str]:
    """Run the labels; the outcome of each test by id."""
    results = tests / f"idfields_results_{tag}.json"
    results.unlink(missing_ok=True)
    env = {
        **os.environ,
        "IDFIELDS_SUITE_URL": url,
        "IDFIELDS_SUITE_DB": f"idfields_django_suite_{os.getpid()}_{tag}",
        "IDFIELDS_SUITE_AUTO_FIELD": auto_field,
        "IDFIELDS_SUITE_RESULTS": str(results),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")])),
    }
    command = [sys.executable, script, "--settings=idfields_suite_settings", "--noinput",
               f"--parallel={parallel}", *LABELS]
    print(f"== {auto_field}: {' '.join(command[1:])}", flush=True)
    subprocess.run(command, cwd=tests, env=env, check=False)
    if not results.exists():
        raise SystemExit(f"the run with {auto_field} wrote no results: see its output above")
    outcomes: dict[str, str] = json.loads(results.read_text())
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "idfields-django-suite")
    parser.add_argument("--parallel", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--url", default=os.environ.get("IDFIELDS_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"))
    args = parser.parse_args()
    tests = sources(args.work)
    base = run(tests, "runtests.py", BASELINE, args.url, args.parallel, "base")
    ours = run(tests, "runtests_idfields.py", OURS, args.url, args.parallel, "ours")
    passed_base = {test for test, outcome in base.items() if outcome == "ok"}
    passed_ours = {test for test, outcome in ours.items() if outcome == "ok"}
    lost = sorted(passed_base - passed_ours)
    print(f"BigAutoField: {len(passed_base)} of {len(base)} pass; {OURS.rsplit('.', 1)[1]}: "
          f"{len(passed_ours)} of {len(ours)} pass; lost {len(lost)}")
    unexpected = [test for test in lost if test not in EXPECTED]
    for test in lost:
        note = f"expected: {EXPECTED[test]}" if test in EXPECTED else ours.get(test, "missing")
        print(f"  {test}: {note}")
    for test in sorted(set(EXPECTED) - set(lost)):
        print(f"  {test} is in EXPECTED but did not fail: remove it")
    env = {**os.environ, "IDFIELDS_SUITE_URL": args.url, "IDFIELDS_SUITE_DB": "idfields_django_suite_checks",
           "IDFIELDS_SUITE_AUTO_FIELD": OURS, "IDFIELDS_SUITE_RESULTS": os.devnull, "TMPDIR": str(args.work),
           "DJANGO_SETTINGS_MODULE": "idfields_suite_settings"}
    checked = subprocess.run([sys.executable, "-c", CHECK_ALL.replace("import runtests", "import runtests_idfields as runtests")], cwd=tests, env=env, check=False)
    return 1 if unexpected or checked.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
