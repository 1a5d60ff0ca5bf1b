from django.apps import AppConfig


class GfkAppConfig(AppConfig):
    name = "tests.convert.gfkapp"
    label = "gfkapp"
    default_auto_field = "django.db.models.AutoField"
