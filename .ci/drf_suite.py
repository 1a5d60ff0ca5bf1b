"""Django REST framework's own test suite with our keys: no test lost that BigAutoField passes.

Downloads the DRF sdist (it ships tests/ and their pytest conftest), and runs its suite with
pytest as its runtests.py does, on SQLite and on PostgreSQL, on each once with ``BigAutoField``
and once with ``SnowflakeAutoField`` and ``idfields.django_app`` installed, as a project adds
them. Its conftest configures settings in code, so the copy run here sets the database, the
default key and our app after its ``settings.configure()``; after collection it makes
migrations for DRF's test apps (it ships none, and PostgreSQL cannot create their tables before
auth's that they point at), and runs the system checks as a project's ``runserver`` and ``test``
do (pytest-django does not): an error of ours fails the gate (DRF's own test models have errors
of Django's, which its suite never meets).
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

# Called by the conftest copy before django.setup() and after collection.
OVERRIDES = """\
import os
import shutil
from pathlib import Path

import suites

# DRF's test apps have no migrations; made here, so that migrate builds every table in order.
LABELS = ("tests", "authentication", "generic_relations", "importable")
PACKAGE = "idfields_drf_migrations_" + os.environ["IDFIELDS_SUITE_TAG"]

# What docs/how-to/third-party-generic-keys.md has a project add for an app whose GenericForeignKey
# has an integer object_id (DRF's generic_relations.Tag), in one of its own apps.
WIDEN = '''\
from django.db import migrations

from idfields.migrations.django import WidenObjectId


class Migration(migrations.Migration):
    dependencies = [("tests", "0001_initial"), ("generic_relations", "0001_initial")]
    operations = [WidenObjectId("generic_relations")]
'''


def apply(settings):
    url, name = os.environ["IDFIELDS_SUITE_URL"], os.environ["IDFIELDS_SUITE_DB"]
    settings.DATABASES = {
        "default": suites.database(url, name),
        "secondary": suites.database(url, name + "_secondary"),
    }
    settings.DEFAULT_AUTO_FIELD = os.environ["IDFIELDS_SUITE_AUTO_FIELD"]
    settings.MIGRATION_MODULES = {label: f"{PACKAGE}.{label}" for label in LABELS}
    if settings.DEFAULT_AUTO_FIELD.startswith("idfields."):
        settings.INSTALLED_APPS += ("idfields.django_app",)
        settings.IDFIELDS = {"NODE_SOURCE": "lease"}


def after_collection():
    from django.core import checks
    from django.core.management import call_command

    package = Path(__file__).parent / PACKAGE
    shutil.rmtree(package, ignore_errors=True)
    for folder in (package, *(package / label for label in LABELS)):
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("")
    call_command("makemigrations", *LABELS, verbosity=0)
    if os.environ["IDFIELDS_SUITE_AUTO_FIELD"].startswith("idfields."):
        (package / "tests" / "0002_widen.py").write_text(WIDEN)
    ours = [m for m in checks.run_checks() if m.id.startswith("idfields.") and m.is_serious()]
    with open(os.environ["IDFIELDS_SUITE_CHECKS"], "w") as out:
        out.writelines(f"{message}\\n" for message in ours)
"""

# The outcome of the system checks, beside the tests'.
CHECKS = "system checks (manage.py check)"

# Tests that assert the keys AutoField hands out (1, 2, 3 in a fresh table), with the assertion.
# A module or class name stands for all its tests. Some leave state behind when they fail
# (filters reloaded with another query parameter), so the tests after them are run again.
EXPECTED = {
    "tests.test_relations_pk": "serializer.data == [{'id': 1, 'target': 1}, ...], get(pk=1)",
    "tests.test_relations_slug": "serializer.data == [{'id': 1, ...}], get(pk=1)",
    "tests.test_relations_hyperlink": "'url': 'http://testserver/foreignkeysource/1/', get(pk=1)",
    "tests.test_filters.OrderingFilterTests": "response.data == [{'id': 3, 'title': 'xwv'}, ...]",
    "tests.test_filters.SearchFilterTests": "response.data == [{'id': 1, 'title': 'z'}, ...]",
    "tests.test_filters.SensitiveOrderingFilterTests": "response.data == [{'id': 1, ...}, ...]",
    "tests.test_filters.SearchFilterM2MTests": "setUpTestData: attributes.add(1, 2, 3)",
    "tests.test_generics.TestRootView": "response.data == {'id': 4, 'text': 'foobar'}",
    "tests.test_generics.TestInstanceView": "view(request, pk=1), 2 queries (404 on our keys)",
    "tests.test_generics.TestFilterBackendAppliedToViews": "view(request, pk=1): 200",
    "tests.test_generics.TestOverriddenGetObject": "view(request, pk=1): 200",
    "tests.test_generics.TestCreateModelWithAutoNowAddField": "Comment.objects.get(pk=1)",
    "tests.test_lazy_hyperlinks.TestLazyHyperlinkNames": "'<a href=/example/1/>An example</a>'",
    "tests.test_model_serializer.Issue3674Test": "serializer.data == {'id': 1, ...}",
    "tests.test_model_serializer.TestRelationalFieldDisplayValue": "choices == {1: 'Red Color'}",
    "tests.test_permissions.CustomPermissionsTests": "denied_object_view(request, pk=1): 403",
    **dict.fromkeys(
        (
            f"tests.test_permissions.ModelPermissionsIntegrationTests.{name}"
            for name in (
                "test_has_delete_permissions",
                "test_has_put_permissions",
                "test_options_permitted",
                "test_options_updateonly",
            )
        ),
        "instance_view(request, pk=1) / root_view(request, pk='1'): 404 on our keys",
    ),
    "tests.test_validators.TestUniqueConstraintValidation.test_single_field_uniq_validators": (
        "ids_in_qs == {frozenset([1]), frozenset([3])}"
    ),
}

# Test modules declare models too: their migrations are made once collection imported them all
# (makemigrations looks at the database, which pytest-django blocks until a test asks for it).
COLLECTED = """

def pytest_collection_finish(session):
    import idfields_drf_overrides
    from pytest_django.plugin import blocking_manager_key

    with session.config.stash[blocking_manager_key].unblock():
        idfields_drf_overrides.after_collection()
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
    ours = "    import idfields_drf_overrides\n\n    idfields_drf_overrides.apply(settings)\n"
    (root / "tests" / "conftest.py").write_text(text.replace(ANCHOR, ours + ANCHOR) + COLLECTED)


def node_id(root: Path, test: str) -> str:
    """pytest's id of a test named ``module.Class.test`` (as junitxml names it) under ``root``."""
    parts = test.split(".")
    for end in range(len(parts) - 1, 0, -1):
        module = "/".join(parts[:end]) + ".py"
        if (root / module).exists():
            return "::".join([module, *parts[end:]])
    raise SystemExit(f"no module of {root} holds {test}")


def gate(backend: str, root: Path, results: Path, site: str) -> list[str]:
    """Run DRF's suite on ``backend`` with BigAutoField, then ours; the tests lost."""

    def run(tag: str, auto_field: str, tests: list[str]) -> dict[str, str]:
        report = results / f"drf-{backend}-{tag}.xml"
        checks = report.with_suffix(".checks")
        checks.unlink(missing_ok=True)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")])),
            "IDFIELDS_SUITE_URL": SERVERS[backend],
            "IDFIELDS_SUITE_DB": f"idfields_drf_suite_{os.getpid()}_{tag}",
            "IDFIELDS_SUITE_TAG": tag,
            "IDFIELDS_SUITE_AUTO_FIELD": auto_field,
            "IDFIELDS_SUITE_CHECKS": str(checks),
        }
        # runtests.py's own options; pytest-randomly (if installed) would reorder the suite.
        command = ["-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-q"]
        command += ["--tb=short", "-ra", f"--junitxml={report}", *tests]
        outcomes = suites.run(command, root, env, report)
        if errors := checks.read_text():
            print(f"the system checks stop a project with our app:\n{errors}")
        outcomes[CHECKS] = "error" if errors else "ok"
        return outcomes

    base = run("base", suites.BASELINE, ["tests"])
    ours = run("ours", suites.OURS, ["tests"])
    print(f"Django REST framework's suite on {backend}:")
    lost = suites.lost_tests(base, ours, EXPECTED)
    if tests := [test for test in lost if test != CHECKS]:
        # once more without the rest: a test may fail only after a listed one left state behind
        again = run("again", suites.OURS, [node_id(root, test) for test in tests])
        lost = [test for test in lost if again.get(test) != "ok"]
        print(f"after running them again without the rest, {len(lost)} lost on {backend}: {lost}")
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
