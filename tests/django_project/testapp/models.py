"""Models using every idfields field: auto fields via DEFAULT_AUTO_FIELD and explicitly, plain ID
columns, FKs, M2M (auto-created through table), multi-table inheritance and a GenericForeignKey
with a bigint ``object_id``."""

from __future__ import annotations

from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models

from idfields.django_app.fields import (
    DecimalIdAutoField,
    KSortedAutoField,
    KSortedIdField,
    SnowflakeField,
    TraceIdAutoField,
    TraceIdField,
)
from idfields.django_app.public import PublicId


class Author(models.Model):
    """pk from DEFAULT_AUTO_FIELD (SnowflakeAutoField); shown to users as its public ID."""

    name = models.CharField(max_length=100)
    public_id = PublicId()

    def __str__(self) -> str:
        return self.name


class Tag(models.Model):
    id = TraceIdAutoField(primary_key=True)
    public_id = PublicId(label="shop.tag")  # pinned: renaming the model keeps its URLs
    label = models.CharField(max_length=50, unique=True)


class Book(models.Model):
    author = models.ForeignKey(Author, on_delete=models.CASCADE, related_name="books")
    tags = models.ManyToManyField(Tag, blank=True)
    title = models.CharField(max_length=200)
    public_id = SnowflakeField(unique=True)  # a second ID column, filled on insert when blank
    trace = TraceIdField(null=True)


class Ledger(models.Model):
    id = DecimalIdAutoField(primary_key=True)
    amount = models.IntegerField(default=0)


class Event(models.Model):
    """The layout of IDFIELDS["LAYOUT"] as pk, and a JS-safe ID column."""

    id = KSortedAutoField(primary_key=True)
    js_id = KSortedIdField(layout="snowflake_js")


class Place(models.Model):
    name = models.CharField(max_length=50)


class Restaurant(Place):
    """Multi-table inheritance: the pk is the parent's, assigned when the parent row is."""

    serves_pizza = models.BooleanField(default=False)


class Pizzeria(Restaurant):
    """Two levels of multi-table inheritance (Django's copy recipe resets two links)."""

    oven = models.CharField(max_length=20, default="wood")


class Comment(models.Model):
    """A GenericForeignKey that can point at 63-bit keys: ``object_id`` is bigint."""

    content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE)
    object_id = models.PositiveBigIntegerField()
    target = GenericForeignKey("content_type", "object_id")
    text = models.CharField(max_length=100)


class Row(models.Model):
    """A narrow model for bulk inserts."""

    value = models.IntegerField()
