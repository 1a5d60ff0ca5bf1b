"""Django with ``CONN_MAX_AGE = 0`` (its default: a connection per request) behind a
session-mode PgBouncer resetting with ``DISCARD ALL``: every request's database-side ID comes
from the one pooled backend's one node (lease-protocol invariant D2)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import needs
import pytest
from databases import DbUrl
from django.core.signals import request_finished, request_started
from django.db import connections, models
from django.test.utils import isolate_apps

from idfields.django_app.fields import SnowflakeAutoField
from tests.pg import pgbouncer

REQUESTS = 100


@pytest.fixture
def through_bouncer() -> Iterator[Any]:
    """The default connection pointed at a PgBouncer (session mode, DISCARD ALL, one server
    connection) in front of its own server, with CONN_MAX_AGE = 0; restored afterwards."""
    connection = connections["default"]
    assert connection.vendor == "postgresql"  # the postgres marker's server
    if pgbouncer.binary() is None:
        needs.skip("pgbouncer")
    saved = dict(connection.settings_dict)
    server = DbUrl.parse(
        f"postgresql://{saved['USER']}@{saved['HOST']}:{saved['PORT']}/{saved['NAME']}"
    )
    bouncer = pgbouncer.start(server, "session", "DISCARD ALL", pool_size=1)
    connection.close()
    connection.settings_dict.update(HOST="127.0.0.1", PORT=bouncer.url.port, CONN_MAX_AGE=0)
    try:
        yield bouncer
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
        bouncer.stop()


@pytest.mark.django_db(databases=["default"], transaction=True)
def test_requests_through_a_session_pool_share_one_node(through_bouncer: Any) -> None:
    """100 requests, each on a fresh client connection to the pool (Django closes it at the
    request's end): 100 rows, one backend, one node (without the re-take: one node each)."""
    connection = connections["default"]
    with isolate_apps("tests.django_project.testapp"):

        class PooledRow(models.Model):
            id = SnowflakeAutoField(primary_key=True, generation="db")
            backend = models.IntegerField()

            class Meta:
                app_label = "testapp"

        with connection.schema_editor() as editor:
            editor.create_model(PooledRow)
        try:
            for _ in range(REQUESTS):
                request_started.send(sender=None)
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    pid = cursor.fetchone()[0]
                PooledRow.objects.create(backend=pid)
                request_finished.send(sender=None)
            ids = list(PooledRow.objects.values_list("pk", flat=True))
            backends = set(PooledRow.objects.values_list("backend", flat=True))
        finally:
            with connection.schema_editor() as editor:
                editor.delete_model(PooledRow)
    assert len(ids) == len(set(ids)) == REQUESTS
    assert len(backends) == 1
    assert len({(pk >> 12) & 1023 for pk in ids}) == 1
