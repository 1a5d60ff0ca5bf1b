from django.db import migrations

from idfields.migrations.django import (
    AddBigintShadow,
    BackfillBigintShadow,
    ValidateShadowConstraints,
)


class Migration(migrations.Migration):
    atomic = False  # the backfill commits per batch, the indexes build CONCURRENTLY

    dependencies = [("convapp", "0001_initial")]

    operations = [
        AddBigintShadow("Parent", lock_timeout="2s"),
        BackfillBigintShadow("Parent", batch_pages=2),
        ValidateShadowConstraints("Parent"),
    ]
