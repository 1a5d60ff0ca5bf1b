"""Django migration operations of idfields."""

from idfields.migrations.django.convert import ConvertToKSortedId
from idfields.migrations.django.functions import InstallIdFunctions

__all__ = ["ConvertToKSortedId", "InstallIdFunctions"]
