"""The database-side ID functions, SQL version 0005 (PostgreSQL only; elsewhere a no-op).

Upgrades 0004 in place: bulk loads as ranges, ``idfields.take_snowflake_ranges(n)`` and
``take_traceid_ranges(n)``, one (first_id, last_id) row per tick for the INSERT to expand.
The reverse restores 0004.
"""

from django.db import migrations

from idfields.migrations.django import InstallIdFunctions


class Migration(migrations.Migration):
    dependencies = [("idfields", "0004_idfields_functions_0004")]

    operations = [InstallIdFunctions(version="0005", from_version="0004")]
