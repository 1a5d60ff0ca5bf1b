from django.db import migrations

from idfields.migrations.django import ConvertToKSortedId


class Migration(migrations.Migration):
    dependencies = [("convapp", "0001_initial")]

    operations = [
        ConvertToKSortedId("Parent", lock_timeout="2s"),
        ConvertToKSortedId("Account"),
    ]
