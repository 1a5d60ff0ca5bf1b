from django.contrib import admin

from idfields.django_app.admin import (
    IdAdminMixin,
    PublicIdAdminMixin,
    created_from_id,
    public_id_column,
)
from shop.models import Customer, Order


@admin.register(Customer)
class CustomerAdmin(IdAdminMixin, admin.ModelAdmin[Customer]):
    list_display = ("name", created_from_id())


@admin.register(Order)
class OrderAdmin(PublicIdAdminMixin, admin.ModelAdmin[Order]):
    list_display = ("pk", public_id_column(), created_from_id("reference"))
    search_fields = ("customer__name",)


class BothAdmin(IdAdminMixin, PublicIdAdminMixin, admin.ModelAdmin[Order]):
    pass
