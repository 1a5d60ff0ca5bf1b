"""Settings of the sample project: django-stubs' plugin imports them to learn the models."""

import django_stubs_ext

django_stubs_ext.monkeypatch()  # ModelAdmin[Order] and kin at run time, as django-stubs says

SECRET_KEY = "sample-project"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.messages",
    "django.contrib.sessions",
    "idfields.django_app",
    "shop",
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
DEFAULT_AUTO_FIELD = "idfields.django_app.fields.SnowflakeAutoField"
IDFIELDS = {"PERMUTATION_KEY": "bdbb59ec8e35f939dae3136a7049525779ac5416d0459e0c5b8b39bafcaa39bb"}
