"""Django on PostgreSQL: ``SnowflakeAutoField`` against ``BigAutoField`` (an identity column).

- ``bulk_create`` of 10,000 rows (batches of 1,000, one transaction): app-side IDs travel in
  the INSERT and need no ``RETURNING``, so the target is ratio <= 1.0;
- 1,000 single ``save()`` calls in autocommit (``synchronous_commit = off``): one INSERT
  each, target ratio <= 1.05;
- the per-object cost of the field's hot path (``get_pk_value_on_save``) against a bare
  generator call, and what psycopg spends per row on the one column BigAutoField does not send.

Both models run in paired rounds (:mod:`benchmarks.timing`), each into an emptied table.

Where the time goes (cProfile): per row, ``bulk_create`` on PostgreSQL (Django 5.2 inserts
through ``UNNEST`` of one array per column) costs our model one more column than the identity
model: Django's per-field ``pre_save`` / ``get_db_prep_save`` calls, and psycopg's pure-Python
text dump of one more array, whose quoting regex scans each 19-digit ID (the largest part). The
identity model pays instead for ``nextval`` per row, ``RETURNING`` and setting the returned pks.
The field's own share is one attribute lookup and the generator call.

The server comes from ``IDFIELDS_TEST_DATABASE_URL`` (the test default otherwise); the tables are
created and dropped here. Django is configured by this module (a process configures it once).
``python -m benchmarks.bench_django [--quick]``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import Any
from urllib.parse import unquote, urlsplit

from psycopg import sql

from benchmarks import Skip
from benchmarks.report import run_alone
from benchmarks.rows import Row
from benchmarks.timing import (
    Paired,
    ns_per_call,
    paired,
    paired_rows,
    paired_wall_and_cpu,
    wall_and_cpu,
)

URL_ENV, DEFAULT_URL = "IDFIELDS_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"
BASELINE = "BigAutoField (identity)"
OURS = "SnowflakeAutoField"
FIELD, DUMP = "field.get_pk_value_on_save()", "psycopg: the ID column of a bulk INSERT"


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
                # every commit waits for the same WAL flush; off, save() times the code, not disk
                "OPTIONS": {"options": "-c synchronous_commit=off"},
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
        name: models.CharField[str, str] = models.CharField(max_length=40)
        amount: models.IntegerField[int, int] = models.IntegerField()

        class Meta:
            app_label = "benchmarks"
            db_table = "idf_bench_dj_ksorted"

    class Identity(models.Model):
        id: models.BigAutoField[int, int] = models.BigAutoField(primary_key=True)
        name: models.CharField[str, str] = models.CharField(max_length=40)
        amount: models.IntegerField[int, int] = models.IntegerField()

        class Meta:
            app_label = "benchmarks"
            db_table = "idf_bench_dj_identity"

    return KSorted, Identity


def _truncate(model: type[Any]) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {connection.ops.quote_name(model._meta.db_table)}")


def _bulk(model: type[Any], count: int) -> tuple[float, float]:
    from django.db import transaction

    _truncate(model)
    objects = [model(name=f"row {i}", amount=i) for i in range(count)]

    def insert() -> None:
        with transaction.atomic():
            model.objects.bulk_create(objects, batch_size=1000)

    wall, cpu = wall_and_cpu(insert)
    return wall / count * 1e6, cpu / count * 1e6


def _saves(model: type[Any], count: int) -> tuple[float, float]:
    _truncate(model)
    objects = [model(name=f"row {i}", amount=i) for i in range(count)]

    def insert() -> None:
        for obj in objects:
            obj.save()

    wall, cpu = wall_and_cpu(insert)
    return wall / count * 1e6, cpu / count * 1e6


def _path_rows(
    group: str, results: tuple[Paired[str], Paired[str]], target: float, note: str | None = None
) -> list[Row]:
    """Wall time per row (held to ``target``), then client CPU per row in a group of its own."""
    wall, cpu = results
    notes = {OURS: note} if note else {}
    return paired_rows(
        group, "us/row", wall, BASELINE, targets={OURS: target}, notes=notes
    ) + paired_rows(f"{group}, client CPU", "us/row", cpu, BASELINE)


def _bulk_note(hot_path: list[Row]) -> str:
    """Where bulk_create's extra time per row goes, from the hot path's figures of this run."""
    value = {row["name"]: row["value"] for row in hot_path}
    dump, field = value[DUMP], value[FIELD]
    return (
        f"the one column BigAutoField does not send: psycopg's pure-Python text dump of one more "
        f"bigint[] ({dump:.0f} ns per ID; a 19-digit ID costs it more than a small int), the "
        f"field's ID ({field:.0f} ns) and Django's per-field pre_save and get_db_prep_save; the "
        "identity model pays RETURNING and setting the pks instead. What the field does about "
        "it: get_db_prep_save passes an int straight through, no RETURNING for app-side IDs; "
        "psycopg dumps Django's parameter lists itself, which no field can make cheaper"
    )


def _hot_path(model: type[Any], quick: bool) -> list[Row]:
    """Nanoseconds per object. Short runs (``calls`` IDs each) on the process's generator: a
    long tight loop would outrun the layout's capacity and time the waits instead of the code."""
    from django.db import connection

    from idfields.django_app.sources import generator_for

    generator = generator_for("snowflake")
    field = model._meta.pk
    group = "django hot path (per object)"
    rounds = 3 if quick else 15
    ids = generator.take(1000)
    subjects: dict[str, Callable[[], object]] = {
        "generator()": generator,
        FIELD: partial(field.get_pk_value_on_save, model(amount=0)),
    }
    result: Paired[str] = paired(list(subjects), rounds, lambda n: ns_per_call(subjects[n], 20_000))
    literal, raw = sql.Literal(ids), connection.connection
    per_id = Paired(
        {DUMP: [
            ns_per_call(lambda: literal.as_string(raw), 20) / len(ids) for _ in range(rounds)
        ]}
    )  # fmt: skip
    note = {DUMP: "text literal of a bigint[] of 1,000 IDs"}
    return paired_rows(group, "ns", result, "generator()") + paired_rows(
        group, "ns", per_id, None, notes=note
    )


def run(quick: bool = False) -> list[Row]:
    _configure()
    from django.db import connection

    bulk_count, save_count, repeats = (500, 100, 2) if quick else (10_000, 1_000, 11)
    ksorted, identity = _models()
    with connection.schema_editor() as editor:
        for model in (ksorted, identity):
            editor.execute(f"DROP TABLE IF EXISTS {editor.quote_name(model._meta.db_table)}")
            editor.create_model(model)
    try:
        ksorted(name="warm-up", amount=0).save()  # the node is taken outside the timed runs
        models = {OURS: ksorted, BASELINE: identity}
        bulk = paired_wall_and_cpu(list(models), repeats, lambda n: _bulk(models[n], bulk_count))
        saves = paired_wall_and_cpu(list(models), repeats, lambda n: _saves(models[n], save_count))
        hot_path = _hot_path(ksorted, quick)
        bulk_group = f"Django bulk_create (PostgreSQL, {bulk_count:,} rows)"
        return [
            *_path_rows(bulk_group, bulk, 1.0, _bulk_note(hot_path)),
            *_path_rows(f"Django save() (PostgreSQL, {save_count:,} rows)", saves, 1.05),
            *hot_path,
        ]
    finally:
        with connection.schema_editor() as editor:
            for model in (ksorted, identity):
                editor.delete_model(model)
        connection.close()


if __name__ == "__main__":
    run_alone(run)
