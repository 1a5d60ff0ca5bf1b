"""Django migration operations of idfields.

Each operation's ``__module__`` is this package, so the migration files Django writes import
``idfields.migrations.django``, never the private module that defines it.
"""

from idfields.migrations.django._convert import ConvertToKSortedId, WidenObjectId
from idfields.migrations.django._functions import InstallIdFunctions, InstallLayoutFunctions
from idfields.migrations.django._online import (
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

for _name in __all__:
    globals()[_name].__module__ = __name__
