from django.db import migrations

from idfields.migrations.django import SwapToBigint


class Migration(migrations.Migration):
    dependencies = [("convapp", "0002_shadow")]

    operations = [SwapToBigint("Parent", lock_timeout="2s")]
