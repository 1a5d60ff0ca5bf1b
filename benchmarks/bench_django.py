"""Django on PostgreSQL: ``SnowflakeAutoField`` against ``BigAutoField`` (an identity column).

- ``bulk_create`` of 100,000 rows (batches of 1,000, one transaction): app-side IDs travel in
  the INSERT and need no ``RETURNING``, so the target is ratio <= 1.0;
- 10,000 single ``save()`` calls in autocommit: one INSERT each, target ratio <= 1.05;
- the per-object cost of the field's hot path (``get_pk_value_on_save``) against a bare
  generator call, for information.

The server comes from ``IDFIELDS_TEST_DATABASE_URL`` (the test default otherwise); the tables are
created and dropped here. Django is configured by this module (a process configures it once).
``python -m benchmarks.bench_django [--quick]``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

from benchmarks import Skip
from benchmarks.report import run_alone
from benchmarks.rows import Row
from benchmarks.timing import ns_per_call

URL_ENV, DEFAULT_URL = "IDFIELDS_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"
BASELINE = "BigAutoField (identity)"
OURS = "SnowflakeAutoField"


def _configure() -> None:
    import django
    from django.conf import settings

    if settings.configured:
        if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
            raise Skip("Django is already configured in this process without PostgreSQL")
        return
    url = urlsplit(os.environ.get(URL_ENV, DEFAULT_URL))
    settings.configure(
        DATABASES={
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": unquote(url.path.lstrip("/")) or "postgres",
                "USER": unquote(url.username or "postgres"),
                "PASSWORD": unquote(url.password or ""),
                "HOST": url.hostname or "127.0.0.1",
                "PORT": str(url.port or 5432),
            }
        },
        INSTALLED_APPS=["idfields.django_app", "benchmarks"],
        IDFIELDS={"NODE_SOURCE": "static", "NODE": 1},
        USE_TZ=True,
    )
    django.setup()


def _models() -> tuple[type[Any], type[Any]]:
    from django.db import models

    from idfields.django_app.fields import SnowflakeAutoField

    class KSorted(models.Model):
        id = SnowflakeAutoField(primary_key=True)
        name = models.CharField(max_length=40)
        amount = models.IntegerField()

        class Meta:
            app_label = "benchmarks"
            db_table = "idf_bench_dj_ksorted"

    class Identity(models.Model):
        id = models.BigAutoField(primary_key=True)
        name = models.CharField(max_length=40)
        amount = models.IntegerField()

        class Meta:
            app_label = "benchmarks"
            db_table = "idf_bench_dj_identity"

    return KSorted, Identity


def _best(timings: dict[type[Any], list[float]], step: Callable[[type[Any]], float]) -> None:
    for model, spent in timings.items():  # interleaved: both see the same server state
        spent.append(step(model))


def _truncate(model: type[Any]) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {connection.ops.quote_name(model._meta.db_table)}")


def _bulk(model: type[Any], count: int) -> float:
    from django.db import transaction

    _truncate(model)
    objects = [model(name=f"row {i}", amount=i) for i in range(count)]
    started = time.perf_counter()
    with transaction.atomic():
        model.objects.bulk_create(objects, batch_size=1000)
    return time.perf_counter() - started


def _saves(model: type[Any], count: int) -> float:
    _truncate(model)
    objects = [model(name=f"row {i}", amount=i) for i in range(count)]
    started = time.perf_counter()
    for obj in objects:
        obj.save()
    return time.perf_counter() - started


def _pair(
    group: str, timings: dict[type[Any], list[float]], count: int, target: float
) -> list[Row]:
    ksorted, identity = timings.values()
    return [
        Row(group=group, name=BASELINE, value=min(identity) / count * 1e6, unit="us/row",
            baseline=None, target=None),
        Row(group=group, name=OURS, value=min(ksorted) / count * 1e6, unit="us/row",
            baseline=BASELINE, target=target),
    ]  # fmt: skip


def _hot_path(model: type[Any], quick: bool) -> list[Row]:
    from idfields.django_app.sources import generator_for

    generator = generator_for("snowflake")
    field = model._meta.pk
    group = "django hot path (per object)"
    timing = {"min_seconds": 0.02 if quick else 0.1, "repeats": 3 if quick else 5}
    return [
        Row(group=group, name="generator()", value=ns_per_call(generator, **timing), unit="ns",
            baseline=None, target=None),
        Row(group=group, name="field.get_pk_value_on_save()",
            value=ns_per_call(lambda: field.get_pk_value_on_save(None), **timing), unit="ns",
            baseline="generator()", target=None),
    ]  # fmt: skip


def run(quick: bool = False) -> list[Row]:
    _configure()
    from django.db import connection

    bulk_count, save_count, repeats = (10_000, 1_000, 1) if quick else (100_000, 10_000, 3)
    ksorted, identity = _models()
    with connection.schema_editor() as editor:
        for model in (ksorted, identity):
            editor.execute(f"DROP TABLE IF EXISTS {editor.quote_name(model._meta.db_table)}")
            editor.create_model(model)
    try:
        ksorted(name="warm-up", amount=0).save()  # the node is taken outside the timed runs
        bulk: dict[type[Any], list[float]] = {ksorted: [], identity: []}
        saves: dict[type[Any], list[float]] = {ksorted: [], identity: []}
        for _ in range(repeats):
            _best(bulk, lambda model: _bulk(model, bulk_count))
            _best(saves, lambda model: _saves(model, save_count))
        return [
            *_pair(f"django bulk_create (postgresql, {bulk_count:,} rows)", bulk, bulk_count, 1.0),
            *_pair(f"django save() (postgresql, {save_count:,} rows)", saves, save_count, 1.05),
            *_hot_path(ksorted, quick),
        ]
    finally:
        with connection.schema_editor() as editor:
            for model in (ksorted, identity):
                editor.delete_model(model)
        connection.close()


if __name__ == "__main__":
    run_alone(run)
