"""The database-side ID functions, SQL version 0004 (PostgreSQL only; elsewhere a no-op).

Upgrades 0003 in place: a growing layout's first ID of a transaction and its ID in a new tick
take one lean PL/pgSQL call (snowflake's next_snowflake_tick()) instead of the generic one.
The reverse restores 0003.
"""

from django.db import migrations

from idfields.migrations.django import InstallIdFunctions


class Migration(migrations.Migration):
    dependencies = [("idfields", "0003_idfields_functions_0003")]

    operations = [InstallIdFunctions(version="0004", from_version="0003")]
