"""Django's own test suite with our keys: a drop-in loses no test that BigAutoField passes.

Downloads the sdist of the installed Django (its tests are not in the wheel), runs
``tests/runtests.py`` on PostgreSQL for ``LABELS``, once with ``BigAutoField`` and once with
``SnowflakeAutoField`` (``idfields.django_app`` added to runtests' always-installed apps), and
fails on any test that passes on the first run and not on the second, except ``EXPECTED``.
Then every idfields system check runs over every model of the whole suite: none may crash.

    python .ci/django_suite.py [--work DIR] [--parallel N]

PostgreSQL is ``$IDFIELDS_TEST_DATABASE_URL`` (a server: the suite makes its own databases).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import django
import suites

LABELS = [
    *("basic", "bulk_create", "model_inheritance", "model_inheritance_regress"),
    *("many_to_many", "m2m_through", "generic_relations", "get_or_create", "update"),
    *("save_delete_hooks", "fixtures", "serializers", "proxy_models", "one_to_one"),
    *("foreign_object", "select_related", "prefetch_related", "custom_pk", "model_formsets"),
    *("admin_changelist",),
]

# Tests whose own models store our 63-bit keys in 32-bit columns. No check can name these: the
# test copies another model's key by hand into an IntegerField primary key.
EXPECTED = {
    # SubBase.sub_id = IntegerField(primary_key=True), given Base.id
    "model_inheritance.tests.ModelInheritanceTests.test_custompk_m2m": "no check",
    # ManualPK.id = IntegerField(primary_key=True), given Animal.pk
    "generic_relations.tests.GenericRelationsTests.test_queries_content_type_restriction": (
        "no check"
    ),
}

SETTINGS = """\
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
    }


DATABASES = {"default": _db(""), "other": _db("_other")}
SECRET_KEY = "django_tests_secret_key"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
DEFAULT_AUTO_FIELD = os.environ["IDFIELDS_SUITE_AUTO_FIELD"]
USE_TZ = False
TEST_RUNNER = "idfields_suite_runner.RecordingRunner"
IDFIELDS = {"NODE_SOURCE": "lease"}
"""

# Installs every test app of Django's suite (runtests' own setup), then runs the idfields checks
# over all their models.
CHECK_ALL = """\
import runtests_idfields
from django.apps import apps
from idfields.django_app import checks, key_checks, unwidened

runtests_idfields.setup_run_tests(0, None, None, None)
models = apps.get_models(include_auto_created=True)
found = checks.check_models(None, databases=None) + checks.check_settings(None)
found += key_checks.check_app_key_overrides(None) + key_checks.check_database_columns(None)
found += unwidened.check_unwidened_fields(None)
for model in models:
    found += [m for m in model.check(databases=None) if m.id and m.id.startswith("idfields.")]
print(f"idfields checks ran over the {len(models)} models of Django's suite: {len(found)} messages")
"""


def prepare(work: Path) -> Path:
    """Django's tests/ of the installed version, with our settings, runner and runtests copy."""
    tests = suites.sdist(f"django=={django.__version__}", work) / "tests"
    (tests / "idfields_suite_settings.py").write_text(SETTINGS)
    (tests / "idfields_suite_runner.py").write_text(suites.RUNNER)
    (tests / "idfields_suite_checks.py").write_text(CHECK_ALL)
    text = (tests / "runtests.py").read_text()
    anchor = '    "django.contrib.staticfiles",\n]'
    if text.count(anchor) != 1:
        raise SystemExit("runtests.py has no ALWAYS_INSTALLED_APPS list ending as expected")
    ours = anchor.replace("\n]", '\n    "idfields.django_app",\n]')
    (tests / "runtests_idfields.py").write_text(text.replace(anchor, ours))
    return tests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/idfields-framework-suites"))
    parser.add_argument("--parallel", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    tests = prepare(args.work)
    url = os.environ.get("IDFIELDS_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/")
    # From Django's tests/requirements/py3.txt, what these labels use.
    site = str(suites.requirements({"tblib": "tblib", "yaml": "PyYAML"}, args.work))

    def env(auto_field: str, tag: str) -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")])),
            "IDFIELDS_SUITE_URL": url,
            "IDFIELDS_SUITE_DB": f"idfields_django_suite_{os.getpid()}_{tag}",
            "IDFIELDS_SUITE_AUTO_FIELD": auto_field,
            "DJANGO_SETTINGS_MODULE": "idfields_suite_settings",
            "TMPDIR": str(args.work),
        }

    def runtests(script: str, labels: list[str], parallel: int) -> list[str]:
        options = ["--settings=idfields_suite_settings", "--noinput", f"--parallel={parallel}"]
        return [script, *options, *labels]

    results = args.work / "results"
    results.mkdir(exist_ok=True)
    base = suites.run(
        runtests("runtests.py", LABELS, args.parallel),
        tests,
        env(suites.BASELINE, "base"),
        results / "django-base.json",
    )
    ours = suites.run(
        runtests("runtests_idfields.py", LABELS, args.parallel),
        tests,
        env(suites.OURS, "ours"),
        results / "django-ours.json",
    )
    lost = suites.lost_tests(base, ours, EXPECTED)
    if lost:  # once more on their own: a timing test on a busy machine is not a regression
        again = suites.run(
            runtests("runtests_idfields.py", lost, 1),
            tests,
            env(suites.OURS, "again"),
            results / "django-again.json",
        )
        lost = [test for test in lost if again.get(test) != "ok"]
        print(f"after running them again on their own, {len(lost)} lost: {lost}")
    checked = suites.run_script(tests / "idfields_suite_checks.py", tests, env(suites.OURS, "c"))
    return 1 if lost or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
