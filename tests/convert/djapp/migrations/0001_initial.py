"""Parent (AutoField) with an M2M to Tag, Child with FKs to Parent and to Account (BigAutoField)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    operations = [
        migrations.CreateModel(
            name="Tag",
            fields=[("id", models.AutoField(primary_key=True, serialize=False))],
        ),
        migrations.CreateModel(
            name="Account",
            fields=[("id", models.BigAutoField(primary_key=True, serialize=False))],
        ),
        migrations.CreateModel(
            name="Parent",
            fields=[
                ("id", models.AutoField(primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=20)),
                ("tags", models.ManyToManyField(to="convapp.tag")),
            ],
        ),
        migrations.CreateModel(
            name="Child",
            fields=[
                ("id", models.AutoField(primary_key=True, serialize=False)),
                (
                    "parent",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, to="convapp.parent"
                    ),
                ),
                (
                    "account",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        to="convapp.account",
                    ),
                ),
            ],
        ),
    ]
