"""The database-side ID functions, SQL version 0002 (PostgreSQL only; elsewhere a no-op).

Installed beside the tables of 0001_initial, whose schema the operation finds on the connection's
search_path when it runs (it refuses two copies); an earlier install of SQL 0001 is upgraded in
place.
"""

from django.db import migrations

from idfields.migrations.django import InstallIdFunctions


class Migration(migrations.Migration):
    dependencies = [("idfields", "0001_initial")]

    operations = [InstallIdFunctions(version="0002")]
