"""Django migration operations of idfields."""

from idfields.migrations.django.functions import InstallIdFunctions

__all__ = ["InstallIdFunctions"]
