"""The coordination tables (schema shared with idfields.sqlalchemy_ext and the PL/pgSQL side) and
the database-side ID functions beside them (PostgreSQL only; elsewhere a no-op), which lease from
these tables: InstallIdFunctions finds their schema on the connection's search_path.
"""

from django.db import migrations, models

from idfields.django_app.lifecycle import claim_once_committed
from idfields.migrations.django import InstallIdFunctions


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="Counter",
            fields=[
                ("name", models.CharField(max_length=100, primary_key=True, serialize=False)),
                ("value", models.BigIntegerField()),
            ],
            options={
                "db_table": "idfields_counter",
            },
        ),
        migrations.CreateModel(
            name="Launch",
            fields=[
                ("id", models.IntegerField(primary_key=True, serialize=False)),
                ("label", models.CharField(max_length=100)),
                ("created_at", models.DateTimeField()),
            ],
            options={
                "db_table": "idfields_launch",
            },
        ),
        migrations.CreateModel(
            name="NodeLease",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("layout", models.CharField(max_length=64)),
                ("node", models.IntegerField()),
                ("holder", models.CharField(max_length=255)),
                ("acquired_at_ms", models.BigIntegerField()),
                ("expires_at_ms", models.BigIntegerField()),
            ],
            options={
                "db_table": "idfields_node_lease",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("layout", "node"), name="idfields_node_lease_layout_node_uniq"
                    )
                ],
            },
        ),
        InstallIdFunctions(version="0001"),
        migrations.RunPython(claim_once_committed, migrations.RunPython.noop, elidable=True),
    ]
