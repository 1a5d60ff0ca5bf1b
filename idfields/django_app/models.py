"""The coordination tables, column for column the schema shared with SQLAlchemy and PL/pgSQL.

Rows are written by :mod:`idfields.coordination` through its own connection, never by the ORM;
the models exist for migrations, the admin and reports.
"""

from __future__ import annotations

from datetime import datetime

from django.db import models

# Implementation: nothing here is API (Django reaches this module through the app).
__all__: list[str] = []


class Launch(models.Model):
    """A deployment: DecimalId's launch_id (1..99,999, max(id) + 1, never reused)."""

    id: models.IntegerField[int, int] = models.IntegerField(primary_key=True)
    label: models.CharField[str, str] = models.CharField(max_length=100)
    created_at: models.DateTimeField[datetime, datetime] = models.DateTimeField()

    class Meta:
        db_table = "idfields_launch"

    def __str__(self) -> str:
        return f"launch {self.id} ({self.label})"


class NodeLease(models.Model):
    """Who holds a node of a layout, until when (the holder issues no timestamp after it)."""

    id: models.BigAutoField[int, int] = models.BigAutoField(primary_key=True)
    layout: models.CharField[str, str] = models.CharField(max_length=64)
    node: models.IntegerField[int, int] = models.IntegerField()
    holder: models.CharField[str, str] = models.CharField(max_length=255)
    acquired_at_ms: models.BigIntegerField[int, int] = models.BigIntegerField()
    expires_at_ms: models.BigIntegerField[int, int] = models.BigIntegerField()

    class Meta:
        db_table = "idfields_node_lease"
        constraints = [
            models.UniqueConstraint(
                fields=["layout", "node"], name="idfields_node_lease_layout_node_uniq"
            )
        ]

    def __str__(self) -> str:
        return f"{self.layout} node {self.node} ({self.holder or 'free'})"


class Counter(models.Model):
    """A persistent synchronized counter, e.g. ``generator:<launch_id>``."""

    name: models.CharField[str, str] = models.CharField(max_length=100, primary_key=True)
    value: models.BigIntegerField[int, int] = models.BigIntegerField()

    class Meta:
        db_table = "idfields_counter"

    def __str__(self) -> str:
        return f"{self.name} = {self.value}"
