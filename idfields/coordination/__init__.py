"""Coordination through the project's own database: node leases, launches, counters, run ids.

Written once against the small :class:`Database` interface; ``idfields.django_app`` and
``idfields.sqlalchemy_ext`` adapt their connections to it and share the same three tables
(``idfields_node_lease``, ``idfields_launch``, ``idfields_counter``). Nothing here imports an
ORM.
"""

from idfields.coordination._counters import (
    LAUNCH_ENV,
    MAX_LAUNCH_ID,
    counter_value,
    current_launch,
    next_value,
    record_launch,
)
from idfields.coordination._database import VENDORS, Database, Result
from idfields.coordination._decimal import DecimalSource, decimal_fields
from idfields.coordination._identity import set_lease_ttl_ceiling
from idfields.coordination._leases import LeaseInfo, LeaseSource, free_dead_holders, list_leases
from idfields.coordination._runids import RunIdSource

__all__ = [
    "LAUNCH_ENV",
    "MAX_LAUNCH_ID",
    "VENDORS",
    "Database",
    "DecimalSource",
    "LeaseInfo",
    "LeaseSource",
    "Result",
    "RunIdSource",
    "counter_value",
    "current_launch",
    "decimal_fields",
    "free_dead_holders",
    "list_leases",
    "next_value",
    "record_launch",
    "set_lease_ttl_ceiling",
]
