from typing import assert_type

from django.db import models

from idfields.django_app.fields import SnowflakeAutoField, SnowflakeField, TraceIdField
from idfields.django_app.public import PublicId


class Customer(models.Model):
    id = SnowflakeAutoField(primary_key=True)
    name = models.CharField(max_length=100)


class Order(models.Model):
    id = SnowflakeAutoField(primary_key=True)
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE)
    reference = SnowflakeField(null=True)
    trace = TraceIdField()
    public_id = PublicId()


def types(order: Order) -> None:
    assert_type(order.id, int)
    assert_type(order.reference, int | None)  # null=True
    assert_type(order.trace, int)
    assert_type(order.customer_id, int)  # a foreign key to an ID field
    assert_type(order.public_id, str | None)
    assert_type(Order.public_id.decode("k3q7m3x0d9a2hzr"), int)
