"""A migration that stores a user layout still loads after the layout's timestamp has run out.

Django imports every migration file (and so rebuilds every stored layout) on each ``migrate``,
``makemigrations`` and test run; one layout refusing to construct would stop them all.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from django.db.migrations.loader import MigrationLoader
from django.test import override_settings

from idfields.migrations.django import InstallLayoutFunctions

MIGRATION = """
from django.db import migrations

from idfields.migrations.django import InstallIdFunctions, InstallLayoutFunctions


class Migration(migrations.Migration):
    initial = True
    dependencies = []
    operations = [
        InstallIdFunctions(version="0001"),
        InstallLayoutFunctions(layout={spec!r}),
    ]
"""

ORDERS_SPEC = {
    "name": "orders",
    "fields": [
        {
            "kind": "timestamp",
            "width": 41,
            "unit": "ms",
            "epoch": "2025-01-01T00:00:00+00:00",
            "wraps": False,
            "name": "timestamp",
            "minimum": 0,
            "maximum": None,
        },
        {
            "kind": "node",
            "width": 8,
            "name": "node",
            "env": "IDFIELDS_NODE_ID",
            "minimum": 0,
            "maximum": None,
            "zero_is_test": False,
        },
        {"kind": "sequence", "width": 14, "name": "sequence", "minimum": 0, "maximum": None},
    ],
    "base": 2,
    "js_safe": False,
    "description": "",
}
HUNDRED_YEARS_NS = 100 * 365 * 86_400 * 10**9  # 41 bits of ms run out after 69.7 years


def test_a_spent_layouts_migration_still_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "spent_layout_migrations"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "0001_orders.py").write_text(MIGRATION.format(spec=ORDERS_SPEC))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "spent_layout_migrations", raising=False)
    frozen = time.time_ns() + HUNDRED_YEARS_NS
    monkeypatch.setattr(time, "time_ns", lambda: frozen)

    with override_settings(MIGRATION_MODULES={"testapp": "spent_layout_migrations"}):
        loader = MigrationLoader(None)
        state = loader.project_state(("testapp", "0001_orders"))

    migration = loader.disk_migrations[("testapp", "0001_orders")]
    (install,) = [op for op in migration.operations if isinstance(op, InstallLayoutFunctions)]
    assert install.layout.runs_out is not None
    assert install.layout.runs_out.timestamp() * 1e9 < frozen  # spent on the frozen clock
    assert install.layout.to_spec() == ORDERS_SPEC
    assert 'CREATE OR REPLACE FUNCTION idfields."next_orders"()' in install.forwards_sql()
    assert state.apps is not None
