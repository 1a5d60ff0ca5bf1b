import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies = [("contenttypes", "0002_remove_content_type_name")]

    operations = [
        migrations.CreateModel(
            name="TaggedItem",
            fields=[
                ("id", models.AutoField(primary_key=True, serialize=False)),
                ("tag", models.CharField(max_length=20)),
                ("object_id", models.PositiveIntegerField()),
                (
                    "content_type",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        to="contenttypes.contenttype",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="TaggedNote",
            fields=[
                (
                    "taggeditem_ptr",
                    models.OneToOneField(
                        auto_created=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        parent_link=True,
                        primary_key=True,
                        serialize=False,
                        to="gfkapp.taggeditem",
                    ),
                ),
                ("note", models.CharField(default="", max_length=20)),
            ],
            bases=("gfkapp.taggeditem",),
        ),
    ]
