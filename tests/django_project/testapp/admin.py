from django.contrib import admin

from idfields.django_app.admin import (
    IdAdminMixin,
    PublicIdAdminMixin,
    created_from_id,
    public_id_column,
)
from tests.django_project.testapp.models import Author, Book


@admin.register(Book)
class BookAdmin(IdAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("title", "public_id", created_from_id("public_id"))


@admin.register(Author)
class AuthorAdmin(PublicIdAdminMixin, IdAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("name", "pk", public_id_column())
    search_fields = ("name",)
