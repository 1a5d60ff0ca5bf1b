"""A Django process that leases a node of the four-node layout, prints it and a few IDs as JSON,
and holds the lease until its standard input closes."""

from __future__ import annotations

import json
import sys

import django


def main() -> None:
    django.setup()
    from idfields.django_app.sources import generator_for

    generator = generator_for("tiny")
    ids = [generator() for _ in range(1000)]
    print(json.dumps({"node": generator.node, "ids": ids}), flush=True)
    sys.stdin.read()  # hold the lease until the test closes our stdin


if __name__ == "__main__":
    main()
