from django.apps import AppConfig


class ConvAppConfig(AppConfig):
    name = "tests.convert.djapp"
    label = "convapp"
    default_auto_field = "django.db.models.AutoField"  # a legacy app: M2M tables too
