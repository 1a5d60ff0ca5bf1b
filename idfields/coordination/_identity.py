"""Which PostgreSQL database the coordination tables live in, and the grace after it changes.

The lease protocol assumes a database that never goes back in time. A promoted asynchronous
standby, a point-in-time recovery, a ``pg_dump``/``pg_restore`` copy and a blue/green cutover
each give the clients a database that may lack the last commits they saw: a lease still in
use, a generator id already issued under. Each also changes what identifies the database:
its system identifier (``pg_control_system()``; a new cluster), its timeline (a promotion, a
point-in-time recovery) or its OID (a copy in another database of the cluster).

The first claim on a database records its identity in ``idfields_counter`` (``identity:<system
identifier>/<timeline>/<oid>``, valued with the end of its grace, server clock, unix ms). A
claim that finds other identities recorded but not its own has met a changed database: it
records its own with a grace of the longest lease ttl any claim recorded, and no lease is
claimed before that grace ends, as Chubby and etcd wait out the longest lease after a
leader change. A holder of a lease the database forgot has issued its last ID before then:
its renewal fails (the row no longer names its claim) or restores the row (it still does).
DecimalId moves to a new launch at once (:func:`record_change_launch`): generator ids the
database forgot may be in use under the old one.
"""

from __future__ import annotations

import logging

from idfields.coordination._counters import record_launch
from idfields.coordination._database import Database, durable, insert_if_absent
from idfields.errors import NodeError

logger = logging.getLogger("idfields.coordination")

PREFIX = "identity:"
LONGEST_TTL = "lease ttl ms"
CHANGE_LABEL = "idfields: coordination database changed"

_CURRENT = (
    "SELECT CAST(EXTRACT(EPOCH FROM pg_catalog.clock_timestamp()) * 1000 AS bigint), "
    "CAST((SELECT system_identifier FROM pg_catalog.pg_control_system()) AS text) "
    "OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) CASE WHEN pg_catalog.pg_is_in_recovery() "
    "THEN 'standby' ELSE CAST(CAST(CAST('x' OPERATOR(pg_catalog.||) pg_catalog.substr("
    "pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8) AS bit(32)) AS bigint) "
    "AS text) END OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) CAST((SELECT oid FROM "
    "pg_catalog.pg_database WHERE datname = pg_catalog.current_database()) AS text)"
)


def observe(database: Database) -> tuple[int, int, str]:
    """(now, end of the grace, identity) of the database, its identity recorded and a change
    of it acted on; (0, 0, '') off PostgreSQL and on a standby, where nothing is written."""
    if database.vendor != "postgresql":
        return 0, 0, ""
    now, value = database.execute(_CURRENT).rows[0]
    identity = _text(value)
    if identity.endswith("/standby"):
        return 0, 0, ""
    return int(now), _recorded_grace(database, identity, int(now)), identity


def settled(database: Database, ttl_ms: int) -> int:
    """The end of the grace after the database's last identity change (server clock, unix ms;
    0 off PostgreSQL), once it has passed; NodeError while it lasts. Records ``ttl_ms`` among
    the lease ttls the grace covers."""
    now, until, identity = observe(database)
    if database.vendor == "postgresql":
        _raise_longest_ttl(database, ttl_ms)
    if now < until:
        raise NodeError(
            f"the coordination database changed (now {identity}: system identifier / "
            "timeline / database OID): a failover to a standby, a restore or a cutover, which "
            "may have lost the last lease claims and renewals. Live processes may still "
            "issue on leases it forgot, so no node is claimed for the longest lease ttl, "
            f"until {until} ms (server clock, {(until - now) / 1000:.1f} s from now); "
            "nothing to do but wait. To avoid the wait, fail over only to a synchronous standby "
            "(docs/how-to/high-availability.md)"
        )
    return until


def _text(value: object) -> str:
    """A text column as text: a driver on an SQL_ASCII database returns bytes."""
    return value.decode() if isinstance(value, bytes) else str(value)


def _recorded_grace(database: Database, identity: str, now: int) -> int:
    key = PREFIX + identity
    rows = database.execute(
        "SELECT name, value FROM idfields_counter WHERE name LIKE %s", [PREFIX + "%"]
    ).rows
    known = {_text(name): int(value) for name, value in rows}
    if key in known:
        return known[key]
    until = 0  # a first record: nothing was lost that anyone waits for
    if known:
        until = now + _longest_ttl(database)
        # The launch first: a crash before the identity is recorded costs a second launch.
        logger.warning(
            "the coordination database changed (%s, known: %s): no lease is claimed for "
            "%.1f s, and DecimalId moves to a new launch",
            identity,
            ", ".join(sorted(known)),
            (until - now) / 1000,
        )
        record_change_launch(database, identity)
    with durable(database):
        insert_if_absent(database, "idfields_counter", ("name", "value"), (key, until))
    return int(
        database.execute("SELECT value FROM idfields_counter WHERE name = %s", [key]).rows[0][0]
    )


def _longest_ttl(database: Database) -> int:
    rows = database.execute(
        "SELECT value FROM idfields_counter WHERE name = %s", [LONGEST_TTL]
    ).rows
    return int(rows[0][0]) if rows else 0


def _raise_longest_ttl(database: Database, ttl_ms: int) -> None:
    if _longest_ttl(database) >= ttl_ms:
        return
    with durable(database):
        if not insert_if_absent(
            database, "idfields_counter", ("name", "value"), (LONGEST_TTL, ttl_ms)
        ):
            database.execute(
                "UPDATE idfields_counter SET value = %s WHERE name = %s AND value < %s",
                [ttl_ms, LONGEST_TTL, ttl_ms],
            )


def record_change_launch(database: Database, identity: str) -> None:
    """A new launch for DecimalId, when any launch is recorded: generator ids of the older
    launches that the database forgot may be in use."""
    if database.execute("SELECT MAX(id) FROM idfields_launch").rows[0][0] is not None:
        record_launch(database, f"{CHANGE_LABEL} ({identity})"[:100])


def change_launch(database: Database) -> int:
    """The launch recorded at the database's last identity change (0 for none)."""
    top = database.execute(
        "SELECT MAX(id) FROM idfields_launch WHERE label LIKE %s", [CHANGE_LABEL + "%"]
    ).rows[0][0]
    return int(top or 0)
