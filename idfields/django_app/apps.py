"""The Django app of idfields (``INSTALLED_APPS += ["idfields.django_app"]``)."""

from __future__ import annotations

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured
from django.db.models.signals import post_save, pre_save

# Implementation: nothing here is API (Django reaches this module through the app).
__all__: list[str] = []


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
            fields,
            key_checks,
            lifecycle,
            link_keys,
            public,
            stopping,
            unwidened,
            widening,
        )

        refused = public.check_permutation_key()
        if refused:  # gunicorn and uwsgi run no system checks: every server stops here
            raise ImproperlyConfigured(f"({refused[0].id}) {refused[0].msg} {refused[0].hint}")
        # has_default() of our keys answers for the instance these name (fields.note_save).
        pre_save.connect(fields.note_save, dispatch_uid="idfields.note_save")
        post_save.connect(fields.note_saved, dispatch_uid="idfields.note_saved")
        lifecycle.install(self)
        stopping.install()
        bulk.install()
        widening.widen_id_holding_columns()
