"""System checks that the project's keys really are ours, in the models and in the database.

- ``idfields.W010``: ``DEFAULT_AUTO_FIELD`` names an idfields field, but an app of the project
  overrides it with ``AppConfig.default_auto_field`` (``startapp`` writes BigAutoField into every
  new ``apps.py``), so its models silently number their rows 1, 2, 3... Django's contrib apps and
  installed third-party packages pin their keys on purpose (their migrations say so) and are
  left alone.
"""

from __future__ import annotations

import sysconfig
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from django.apps import AppConfig, apps
from django.conf import settings
from django.core.checks import CheckMessage, Tags, Warning, register
from django.utils.module_loading import import_string

from idfields.django_app.fields import KSortedFieldMixin

_INSTALLED = {Path(sysconfig.get_path(name)).resolve() for name in ("purelib", "platlib")}


@register(Tags.models)
def check_app_key_overrides(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W010 for every project app whose ``default_auto_field`` hides ours."""
    if not _is_ours(settings.DEFAULT_AUTO_FIELD):
        return []
    configs = app_configs if app_configs is not None else apps.get_app_configs()
    return list(_overrides(configs))


def _is_ours(path: str) -> bool:
    try:
        field = import_string(path)
    except ImportError:
        return False  # Django's own check names a DEFAULT_AUTO_FIELD that does not import
    return isinstance(field, type) and issubclass(field, KSortedFieldMixin)


def _overrides(configs: Iterable[AppConfig]) -> Iterator[CheckMessage]:
    for config in configs:
        if (
            not config._is_default_auto_field_overridden  # type: ignore[attr-defined]
            or _is_ours(config.default_auto_field)
            or config.name.startswith("django.")
            or config.name.startswith("idfields.")
            or _is_installed_package(config)
        ):
            continue
        models = [
            str(model._meta.object_name)
            for model in config.get_models()
            if model._meta.pk is not None
            and model._meta.pk.auto_created
            and model._meta.pk.remote_field is None  # not a multi-table child's parent link
            and not isinstance(model._meta.pk, KSortedFieldMixin)
        ]
        if not models:
            continue
        apps_py = Path(config.path) / "apps.py"
        yield Warning(
            f"{type(config).__qualname__}.default_auto_field = {config.default_auto_field!r} "
            f"overrides DEFAULT_AUTO_FIELD = {settings.DEFAULT_AUTO_FIELD!r}, so the models of "
            f"app {config.label!r} ({', '.join(models)}) number their rows 1, 2, 3... instead "
            "of taking idfields IDs.",
            hint=f"Delete the default_auto_field line from {apps_py} (startapp writes it), then "
            "run makemigrations; or set it to the DEFAULT_AUTO_FIELD value.",
            obj=config.label,
            id="idfields.W010",
        )


def _is_installed_package(config: AppConfig) -> bool:
    """An app from site-packages: its keys are fixed by its own migrations, not ours to change."""
    path = Path(config.path).resolve()
    return any(path.is_relative_to(root) for root in _INSTALLED)
