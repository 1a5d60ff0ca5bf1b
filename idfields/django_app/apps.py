"""The Django app of idfields (``INSTALLED_APPS += ["idfields.django_app"]``)."""

from __future__ import annotations

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured


class IdFieldsConfig(AppConfig):
    name = "idfields.django_app"
    label = "idfields"
    verbose_name = "idfields"
    # Our own tables never depend on our generator (it needs them to hand out nodes).
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from idfields.django_app import (  # noqa: F401 - checks register
            bulk,
            checks,
            key_checks,
            lifecycle,
            public,
            widening,
        )

        problem = public.key_problem()
        if problem is not None:  # every server fails at start, not at the first public ID
            raise ImproperlyConfigured(f"(idfields.E009) {problem}")
        lifecycle.install()
        bulk.install()
        widening.widen_id_holding_columns()
