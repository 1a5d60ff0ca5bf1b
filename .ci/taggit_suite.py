"""django-taggit's own test suite with our keys and the documented widening: no test lost.

django-taggit is the common third-party app with a GenericForeignKey whose ``object_id`` is an
``IntegerField``. Downloads the newest django-taggit sdist that ships its tests, gives its test
app fresh migrations (its committed ones pin AutoField keys), and runs the suite on PostgreSQL
twice: with ``BigAutoField``, then with ``SnowflakeAutoField`` plus what docs/how-to/
third-party-generic-keys.md tells a project to do, a migration of one of its own apps:

    WidenObjectId("taggit", "TaggedItem"), WidenObjectId("tests")

Fails on any test that passes on the first run and not on the second.

    python .ci/taggit_suite.py [--work DIR] [--parallel N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import suites

SETTINGS = """\
import os
from urllib.parse import urlsplit

from tests.settings import *  # noqa: F403

_url = urlsplit(os.environ["IDFIELDS_SUITE_URL"])
_tag = os.environ["IDFIELDS_SUITE_TAG"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ["IDFIELDS_SUITE_DB"],
        "USER": _url.username or "postgres",
        "PASSWORD": _url.password or "",
        "HOST": _url.hostname or "127.0.0.1",
        "PORT": _url.port or 5432,
    }
}
DEFAULT_AUTO_FIELD = os.environ["IDFIELDS_SUITE_AUTO_FIELD"]
MIGRATION_MODULES = {"tests": f"idfields_taggit_{_tag}.tests_migrations"}
TEST_RUNNER = "idfields_suite_runner.RecordingRunner"
if DEFAULT_AUTO_FIELD.startswith("idfields."):
    INSTALLED_APPS = [*INSTALLED_APPS, "idfields.django_app"]  # noqa: F405
    INSTALLED_APPS.append(f"idfields_taggit_{_tag}")
    IDFIELDS = {"NODE_SOURCE": "lease"}
"""

# The project's own app holding the documented widening migration.
WIDEN = """\
from django.db import migrations

from idfields.migrations.django import WidenObjectId


class Migration(migrations.Migration):
    dependencies = [("taggit", "__latest__"), ("tests", "__latest__")]
    operations = [WidenObjectId("taggit", "TaggedItem"), WidenObjectId("tests")]
"""


def prepare(root: Path, tag: str, env: dict[str, str]) -> None:
    """Settings, runner, the widening app and fresh test-app migrations for one run."""
    (root / "idfields_taggit_settings.py").write_text(SETTINGS)
    (root / "idfields_suite_runner.py").write_text(suites.RUNNER)
    package = root / f"idfields_taggit_{tag}"
    shutil.rmtree(package, ignore_errors=True)
    (package / "tests_migrations").mkdir(parents=True)
    (package / "migrations").mkdir()
    for folder in (package, package / "tests_migrations", package / "migrations"):
        (folder / "__init__.py").write_text("")
    pythonpath = os.pathsep.join([str(root), str(suites.REPO), env["PYTHONPATH"]])
    subprocess.run(
        [sys.executable, "-m", "django", "makemigrations", "tests", "-v", "0"],
        cwd=root,
        env={**env, "PYTHONPATH": pythonpath},
        check=True,
    )
    (package / "migrations" / "0001_widen.py").write_text(WIDEN)  # after: it needs theirs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/idfields-framework-suites"))
    parser.add_argument("--parallel", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    root = suites.sdist("django-taggit", args.work, wanted="tests")
    url = os.environ.get("IDFIELDS_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/")
    # taggit's tox.ini deps; tblib lets the parallel runner report errors.
    wanted = {"rest_framework": "djangorestframework", "tblib": "tblib"}
    site = str(suites.requirements(wanted, args.work))
    results = args.work / "results"
    results.mkdir(exist_ok=True)
    outcomes = {}
    for tag, auto_field in (("base", suites.BASELINE), ("ours", suites.OURS)):
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")])),
            "IDFIELDS_SUITE_URL": url,
            "IDFIELDS_SUITE_DB": f"idfields_taggit_suite_{os.getpid()}_{tag}",
            "IDFIELDS_SUITE_AUTO_FIELD": auto_field,
            "IDFIELDS_SUITE_TAG": tag,
            "DJANGO_SETTINGS_MODULE": "idfields_taggit_settings",
        }
        prepare(root, tag, env)
        command = ["-m", "django", "test", "--noinput", f"--parallel={args.parallel}", "tests"]
        outcomes[tag] = suites.run(command, root, env, results / f"taggit-{tag}.json")
    lost = suites.lost_tests(outcomes["base"], outcomes["ours"], {})
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
