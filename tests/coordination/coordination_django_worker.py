"""A Django process for the coordination tests; prints one JSON object of what it observed.

Run with ``DJANGO_SETTINGS_MODULE=coordination_settings``; see test_coordination_django.py.
"""

from __future__ import annotations

import json
import os
import sys

import django


def main() -> None:
    django.setup()
    from django.db import connection, transaction

    from idfields.coordination import list_leases
    from idfields.django_app.sources import coordination_database, generator_for
    from idfields.layouts import get_layout

    report: dict[str, object] = {"pid": os.getpid()}
    try:
        with transaction.atomic():  # the request's transaction, rolled back below
            first = generator_for("snowflake")()
            raise RuntimeError("roll back the request")
    except RuntimeError:
        pass
    generator = generator_for("snowflake")
    report["same_generator"] = generator is generator_for(get_layout("snowflake"))
    report["node"] = generator.node
    report["ids"] = [first, generator()]
    report["decimal"] = generator_for("decimal")() if sys.argv[1:] == ["decimal"] else None
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child takes a node of its own on a connection of its own
        os.close(read)
        os.write(write, json.dumps([generator.node, generator()]).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    with os.fdopen(read) as pipe:
        report["child"] = json.loads(pipe.read())
    leases = list_leases(coordination_database(), "snowflake")
    report["live_holders"] = sorted(lease.holder for lease in leases if lease.live)
    with connection.cursor() as cursor:  # the request connection is untouched by all this
        cursor.execute("SELECT COUNT(*) FROM idfields_node_lease")
        report["rows"] = cursor.fetchone()[0]
    print(json.dumps(report))


if __name__ == "__main__":
    main()
