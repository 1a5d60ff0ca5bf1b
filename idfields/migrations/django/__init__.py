"""Django migration operations of idfields."""

from idfields.migrations.django.convert import ConvertToKSortedId, WidenObjectId
from idfields.migrations.django.functions import InstallIdFunctions, InstallLayoutFunctions
from idfields.migrations.django.online import (
    AddBigintShadow,
    BackfillBigintShadow,
    SwapToBigint,
    ValidateShadowConstraints,
)

__all__ = [
    "AddBigintShadow",
    "BackfillBigintShadow",
    "ConvertToKSortedId",
    "InstallIdFunctions",
    "InstallLayoutFunctions",
    "SwapToBigint",
    "ValidateShadowConstraints",
    "WidenObjectId",
]
