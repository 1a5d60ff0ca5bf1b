"""Django's own test suite with our keys: a drop-in loses no test that BigAutoField passes.

Downloads the sdist of the installed Django (its tests are not in the wheel), runs
``tests/runtests.py`` for ``LABELS`` on PostgreSQL, MariaDB and SQLite, on each once with
``BigAutoField`` and once with ``SnowflakeAutoField`` (``idfields.django_app`` added to runtests'
always-installed apps), and fails on any test that passes on the first run and not on the
second, except ``EXPECTED``. Then every idfields system check runs over every model of the whole
suite: none may crash.

    python .ci/django_suite.py [--work DIR] [--parallel N] [--backend postgresql|mysql|sqlite]...

PostgreSQL is ``$IDFIELDS_TEST_DATABASE_URL`` and MariaDB ``$IDFIELDS_TEST_MYSQL_URL`` (servers:
the suite makes its own databases); SQLite's test databases are in memory.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import django
import suites

# The 20 labels about saving keys, then those an ordinary project leans on besides.
LABELS = [
    *("basic", "bulk_create", "model_inheritance", "model_inheritance_regress"),
    *("many_to_many", "m2m_through", "generic_relations", "get_or_create", "update"),
    *("save_delete_hooks", "fixtures", "serializers", "proxy_models", "one_to_one"),
    *("foreign_object", "select_related", "prefetch_related", "custom_pk", "model_formsets"),
    *("admin_changelist", "auth_tests", "contenttypes_tests", "generic_relations_regress"),
    *("m2m_and_m2o", "m2m_intermediary", "m2m_multiple", "m2m_recursive", "m2m_regress"),
    *("m2m_signals", "m2m_through_regress", "delete", "delete_regress", "many_to_one"),
    *("many_to_one_null", "queries", "aggregation", "lookup", "expressions", "transactions"),
    *("fixtures_regress", "model_forms", "admin_inlines"),
]

# Where each backend's databases are: a server URL, or none for SQLite (Django's test databases
# are then in memory).
SERVERS = {
    "postgresql": ("IDFIELDS_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/"),
    "mysql": ("IDFIELDS_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/"),
    "sqlite": ("", "sqlite://"),
}

# Tests that no key assigned by the application can pass: the backends each fails on (a 32-bit
# `integer` is 64-bit on SQLite) and the assertion that fails. No check can name these: the test
# copies another model's key by hand into an IntegerField (mostly a primary key), or asserts
# what the INSERT of a key the database makes looks like. A class stands for all its tests.
NARROW = ("postgresql", "mysql")
EXPECTED = {
    "model_inheritance.tests.ModelInheritanceTests.test_custompk_m2m": (
        NARROW,
        "SubBase.sub_id = IntegerField(primary_key=True) is given Base.id",
    ),
    "generic_relations.tests.GenericRelationsTests.test_queries_content_type_restriction": (
        NARROW,
        "ManualPK.id = IntegerField(primary_key=True) is given Animal.pk",
    ),
    "queries.tests.RelatedLookupTypeTests": (
        NARROW,
        "setUpTestData: Order.objects.create(id=cls.oa.pk), Order.id = IntegerField(primary_key)",
    ),
    "queries.tests.ValuesSubqueryTests.test_values_in_subquery": (
        NARROW,
        "oi1.status = oi1.pk; oi1.save(), OrderItem.status = IntegerField(): integer out of range",
    ),
    "queries.test_db_returning.ReturningValuesTests.test_insert_returning": (
        tuple(SERVERS),
        "assertIn('RETURNING <table>.<id>', sql): our INSERT carries the id, returns none",
    ),
    "queries.test_db_returning.ReturningValuesTests.test_insert_returning_multiple": (
        tuple(SERVERS),
        "assertIn('RETURNING <table>.<id>, <table>.<created>', sql): it returns created only",
    ),
    "bulk_create.tests.BulkCreateTests.test_explicit_batch_size_respects_max_batch_size": (
        ("sqlite",),
        "assertNumQueries(ceil(1000 / (999 // 3))): the batch counts 3 fields; with the id as a "
        "4th, SQLite's 999 parameters make 5 batches, as pks set by hand do with BigAutoField",
    ),
}

SETTINGS = """\
import os

import suites

_url, _name = os.environ["IDFIELDS_SUITE_URL"], os.environ["IDFIELDS_SUITE_DB"]
DATABASES = {
    "default": suites.database(_url, _name),
    "other": suites.database(_url, _name + "_other"),
}
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


def gate(backend: str, tests: Path, args: argparse.Namespace, site: str) -> list[str]:
    """Run the labels on ``backend`` with BigAutoField, then ours; the tests lost."""
    variable, default = SERVERS[backend]
    url = os.environ.get(variable, default) if variable else default

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
        results / f"django-{backend}-base.json",
    )
    ours = suites.run(
        runtests("runtests_idfields.py", LABELS, args.parallel),
        tests,
        env(suites.OURS, "ours"),
        results / f"django-{backend}-ours.json",
    )
    print(f"Django's suite on {backend}:")
    expected = {test: note for test, (backends, note) in EXPECTED.items() if backend in backends}
    lost = suites.lost_tests(base, ours, expected)
    if lost:  # once more on their own: a timing test on a busy machine is not a regression
        again = suites.run(
            runtests("runtests_idfields.py", lost, 1),
            tests,
            env(suites.OURS, "again"),
            results / f"django-{backend}-again.json",
        )
        lost = [test for test in lost if again.get(test) != "ok"]
        print(f"after running them again on their own, {len(lost)} lost on {backend}: {lost}")
    if backend == "postgresql":
        script = tests / "idfields_suite_checks.py"
        if not suites.run_script(script, tests, env(suites.OURS, "c")):
            lost.append("idfields checks over the whole suite")
    return lost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/idfields-framework-suites"))
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--backend", choices=list(SERVERS), action="append")
    args = parser.parse_args()
    backends = args.backend or list(SERVERS)
    tests = prepare(args.work)
    # From Django's tests/requirements/py3.txt and mysql.txt, what these labels use.
    wanted = {"tblib": "tblib", "yaml": "PyYAML"}
    if "mysql" in backends:  # builds against libmariadb-dev (.ci/run installs it)
        wanted["MySQLdb"] = "mysqlclient"
    site = str(suites.requirements(wanted, args.work))
    return suites.each_backend(
        "Django's suite", backends, lambda backend: gate(backend, tests, args, site)
    )


if __name__ == "__main__":
    sys.exit(main())
