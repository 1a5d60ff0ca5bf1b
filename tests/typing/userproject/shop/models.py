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


def order_key(order: Order) -> int:
    return order.id


def reference_of(order: Order) -> int | None:
    return order.reference


def public_id_of(order: Order) -> str | None:
    return order.public_id


def decode(text: str) -> int:
    return Order.public_id.decode(text)
