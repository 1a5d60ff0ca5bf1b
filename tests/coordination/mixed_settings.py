"""coordination_settings plus the four-node layout of the mixed Django + SQLAlchemy test."""

from coordination_settings import *  # noqa: F403

IDFIELDS = {"NODE_SOURCE": "lease", "LEASE_TTL": 30, "LAYOUTS": {"tiny": "mixed_layouts.TINY"}}
