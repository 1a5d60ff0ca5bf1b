"""The database-side ID functions, SQL version 0003 (PostgreSQL only; elsewhere a no-op).

Upgrades 0002 in place: a transaction's first ID resumes the session's claim in SQL instead of
running the PL/pgSQL slow path. The reverse restores 0002.
"""

from django.db import migrations

from idfields.migrations.django import InstallIdFunctions


class Migration(migrations.Migration):
    dependencies = [("idfields", "0002_idfields_functions_0002")]

    operations = [InstallIdFunctions(version="0003", from_version="0002")]
