"""The coordination database's epochs: which PostgreSQL database the tables live in, since when
it holds every commit, and the grace after it may have lost some (L10 and L11 of
docs/explanation/lease-protocol.md).

The lease protocol assumes a database that never goes back in time. A promoted asynchronous
standby, a point-in-time recovery, a ``pg_dump``/``pg_restore`` copy and a blue/green cutover
give the clients a database that may lack the last commits they saw, and each changes what
identifies the database: its system identifier (``pg_control_system()``; a new cluster), its
timeline (a promotion, a point-in-time recovery) or its OID (a copy in another database of the
cluster). A restored snapshot of a running server's disk keeps all three, and so does a crash
that lost the WAL of a transaction that rolled back (a durable fence, D7 of
lease-protocol-database.md): the server comes up through crash recovery, which discards the
statistics and sets a new reset time (``pg_stat_bgwriter.stats_reset``), whether the postmaster
restarted or only reinitialized after one backend's crash; a clean start reads them back, reset
time included. So a reset time other than the one the epoch began with is a loss, seen at once
or after any number of clean restarts. A clean restart alone loses nothing and counts as no
loss; so does a snapshot of a stopped server restored, which nothing tells apart from one. A
superuser's ``pg_stat_reset_shared('bgwriter')`` sets a new reset time too and costs a grace.

Three rows of ``idfields_counter`` per identity ``<system identifier>/<timeline>/<oid>``, in
server-clock unix ms: ``epoch:<identity>``, the start of the current epoch (the server's start when
the identity is first recorded or the server restarted since, the statistics' reset when that came
later and was a loss; the time the identity was first seen when it changed), ``reset:<identity>``,
the statistics' reset time the epoch began with (unix us), and ``identity:<identity>``, the end of
the grace after its last possible loss (0: none yet). The first claim to see an epoch that may have
lost commits records it with a grace of the longest lease any claim recorded, at least the ceiling
on every ttl (:func:`ttl_ceiling_ms`: the loss may have taken a longer ttl's record with it), plus
a second for the clocks, from the epoch's start: no lease is claimed before it ends, as Chubby and
etcd wait out the longest lease after a leader change, and every claim starts after it. A holder of
a lease the database forgot stops at its next renewal, and a lease that may have lapsed before the
epoch began is not renewed (:func:`may_renew`). DecimalId moves to a new launch at once
(:func:`record_change_launch`): generator ids the database forgot may be in use under the old one.
The database functions keep the same rule in ``idfields.database_epoch()``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from idfields.coordination._counters import LAUNCH_COUNTER, record_launch_here
from idfields.coordination._database import Database, durable, insert_if_absent, text
from idfields.errors import InvalidArgument, NodeError

logger = logging.getLogger("idfields.coordination")

PREFIX = "identity:"
EPOCH = "epoch:"
RESET = "reset:"
LONGEST_TTL = "lease ttl ms"
CEILING = "lease ttl ceiling ms"
# The longest lease ttl a claim may use where the database records no ceiling: the default ttl.
DEFAULT_CEILING_MS = 60_000
CHANGE_LABEL = "idfields: coordination database changed"
# Clocks may disagree with the server's by this much: a grace ends, and a renewal across an
# epoch's start holds, a second later than the server's clock alone would say.
CLOCK_SLACK_MS = 1000

_CURRENT = (
    "SELECT CAST(EXTRACT(EPOCH FROM pg_catalog.clock_timestamp()) * 1000 AS bigint), "
    "CAST(EXTRACT(EPOCH FROM pg_catalog.pg_postmaster_start_time()) * 1000 AS bigint), "
    # Crash recovery discards the statistics and resets them, whether the postmaster restarted
    # or reinitialized; a clean start reads them back, reset time included.
    "CAST(EXTRACT(EPOCH FROM pg_catalog.pg_stat_get_bgwriter_stat_reset_time()) * 1000000 "
    "AS bigint), "
    "pg_catalog.pg_stat_get_bgwriter_stat_reset_time() >= "
    "pg_catalog.pg_postmaster_start_time(), "
    "CAST((SELECT system_identifier FROM pg_catalog.pg_control_system()) AS text) "
    "OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) CASE WHEN pg_catalog.pg_is_in_recovery() "
    "THEN 'standby' ELSE CAST(CAST(CAST('x' OPERATOR(pg_catalog.||) pg_catalog.substr("
    "pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8) AS bit(32)) AS bigint) "
    "AS text) END OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) CAST((SELECT oid FROM "
    "pg_catalog.pg_database WHERE datname = pg_catalog.current_database()) AS text)"
)


@dataclass(frozen=True)
class Epoch:
    """The database's current epoch as recorded (server clock, unix ms)."""

    now: int
    identity: str
    started: int  # the server's start
    reset: int  # the statistics' reset time (unix us)
    since: int  # the epoch's start: the database holds every commit made since
    grace: int  # the end of the grace after the last possible loss; 0 for none
    # False while another session records a loss (its new launch not visible yet)
    settled: bool = True

    @property
    def cause(self) -> str:
        if self.since in (self.started, self.reset // 1000):
            return (
                f"the coordination database restarted through crash recovery ({self.identity}: "
                "system identifier / timeline / database OID unchanged; a crash of the server "
                "or of one backend, a restored snapshot of a running server's disk, or "
                "pg_stat_reset_shared('bgwriter'))"
            )
        return (
            f"the coordination database changed (now {self.identity}: system identifier / "
            "timeline / database OID; a failover to a standby, a restore or a cutover)"
        )


def observe(database: Database, horizon_ms: int = 0) -> Epoch | None:
    """The database's epoch, recorded, and a new one acted on; None off PostgreSQL and on a
    standby, where nothing is written. A grace that begins now covers the longest lease
    recorded and ``horizon_ms``, how far the caller's own holders issue past their clock (a
    lease ttl): a loss may take the record of a ttl with the claims that used it."""
    if database.vendor != "postgresql":
        return None
    now, started, reset, recovered, value = database.execute(_CURRENT).rows[0]
    identity = text(value)
    if identity.endswith("/standby"):
        return None
    current = Epoch(int(now), identity, int(started), int(reset), 0, 0)
    epoch = _recorded(database, current)
    if epoch is None:
        epoch = _record(database, current, bool(recovered), horizon_ms)
    return epoch


def settled(database: Database, ttl_ms: int) -> int:
    """The end of the grace after the database's last possible loss (server clock, unix ms; 0
    off PostgreSQL), once it has passed; NodeError while it lasts. Then records ``ttl_ms``
    among the lease ttls a later grace covers. A ttl above the ceiling is refused before the
    epoch is observed: a grace that begins there covers the caller's ttl."""
    if database.vendor != "postgresql":
        return 0
    ceiling = ttl_ceiling_ms(database)
    if ttl_ms > ceiling:
        raise InvalidArgument(
            f"lease ttl_s={ttl_ms / 1000:g} is longer than the coordination database's lease "
            f"ttl ceiling, {ceiling / 1000:g} s: a restore or a crash may lose the record of a "
            "longer ttl, and the grace after it covers the ceiling. Give a ttl up to the "
            "ceiling, or raise it first with idfields.coordination.set_lease_ttl_ceiling"
            "(database, seconds), under Django manage.py idfields_ttl_ceiling SECONDS "
            "(docs/how-to/high-availability.md)"
        )
    epoch = observe(database, ttl_ms)
    if epoch is None:
        return 0
    _raise_longest_ttl(database, ttl_ms)
    until = epoch.grace
    if epoch.now < until:
        raise NodeError(
            f"{epoch.cause}, which may have lost the last lease claims and renewals. Live "
            "processes may still issue on leases it forgot, so no node is claimed for the "
            f"longest lease ttl (at least the lease ttl ceiling), until {until} ms (server "
            f"clock, {(until - epoch.now) / 1000:.1f} s from now); nothing to do but wait. "
            "Shorter lease ttls under a lower ceiling (set_lease_ttl_ceiling) shorten the wait "
            "(docs/how-to/high-availability.md)"
        )
    return until


def may_renew(database: Database, expires_ms: int) -> bool:
    """Whether a holder whose own latest promise is ``expires_ms`` may renew its lease: not
    while a grace lasts if the lease ended before the epoch began (its start and the clocks'
    second): another process may have claimed the node once it lapsed, in commits the database
    lost, and may still issue on it. Once the grace has passed, that process has stopped."""
    epoch = observe(database)
    return epoch is None or epoch.now >= epoch.grace or expires_ms >= epoch.since + CLOCK_SLACK_MS


def _recorded(database: Database, current: Epoch, stale: bool = False) -> Epoch | None:
    """The recorded epoch of ``current.identity``; None where it is not recorded, or (unless
    ``stale``) the server restarted or the statistics were reset since."""
    identity = current.identity
    rows = database.execute(
        "SELECT name, value FROM idfields_counter WHERE name IN (%s, %s, %s)",
        [PREFIX + identity, EPOCH + identity, RESET + identity],
    ).rows
    values = {text(name): int(value) for name, value in rows}
    grace, since = values.get(PREFIX + identity), values.get(EPOCH + identity)
    if grace is None or since is None:
        return None
    if not stale and (since < current.started or values.get(RESET + identity) != current.reset):
        return None
    return Epoch(current.now, identity, current.started, current.reset, since, grace)


def _lossy_since(database: Database, current: Epoch, recovered: bool) -> int | None:
    """Where the recorded epoch of a known identity is stale: the new epoch's start when it
    may have lost commits (crash recovery, or a reset time other than the recorded one), else
    None."""
    rows = database.execute(
        "SELECT value FROM idfields_counter WHERE name = %s", [RESET + current.identity]
    ).rows
    reset_changed = bool(rows) and int(rows[0][0]) != current.reset
    if recovered or reset_changed:
        return max(current.started, current.reset // 1000)
    return None


def _record(database: Database, current: Epoch, recovered: bool, horizon_ms: int) -> Epoch:
    """A new epoch: the identity first recorded, changed, the server restarted or its
    statistics reset; a loss where the identity changed, the server came up through crash
    recovery or the statistics were reset since the last epoch.

    One session at a time records an epoch, in one durable transaction under an advisory lock
    (class 1153602333 = lease_lock_key('idfields_epoch'), as the database functions take it,
    maybe for the rest of a transaction of their caller's): a claim never waits for it, and
    assumes the grace the other session records."""
    identity, now, started = current.identity, current.now, current.started
    key, epoch_key = PREFIX + identity, EPOCH + identity
    with durable(database):
        known = [
            text(name)
            for (name,) in database.execute(
                "SELECT name FROM idfields_counter WHERE name LIKE %s", [PREFIX + "%"]
            ).rows
        ]
        longest = max(_longest_ttl(database), horizon_ms, ttl_ceiling_ms(database))
        first = key not in known
        lost_since = None if first else _lossy_since(database, current, recovered)
        lossy = (first and (recovered or bool(known))) or lost_since is not None
        since = now if first and known else started if lost_since is None else lost_since
        if not database.execute("SELECT pg_try_advisory_xact_lock(1153602333, 0)").rows[0][0]:
            recorded = _recorded(database, current, stale=True)
            grace = max(recorded.grace if recorded else 0, since + longest + CLOCK_SLACK_MS)
            return Epoch(
                now, identity, started, current.reset, since, grace if lossy else 0, not lossy
            )
        recorded = _recorded(database, current)
        if recorded is not None:  # by a session that let the lock go since this one looked
            return recorded
        insert_if_absent(database, "idfields_counter", ("name", "value"), (LAUNCH_COUNTER, 0))
        insert_if_absent(database, "idfields_counter", ("name", "value"), (epoch_key, since))
        if not insert_if_absent(
            database, "idfields_counter", ("name", "value"), (RESET + identity, current.reset)
        ):
            database.execute(
                "UPDATE idfields_counter SET value = %s WHERE name = %s",
                [current.reset, RESET + identity],
            )
        grace = since + longest + CLOCK_SLACK_MS if lossy else 0
        if lossy:
            how = f"known: {', '.join(sorted(known))}" if first and known else "crash recovery"
            _changed(identity, how, grace - now)
            record_change_launch(database, identity if first else f"{identity} restarted")
        if first:
            insert_if_absent(database, "idfields_counter", ("name", "value"), (key, grace))
        else:
            database.execute(
                "UPDATE idfields_counter SET value = GREATEST(value, %s) WHERE name = %s",
                [since, epoch_key],
            )
            database.execute(
                "UPDATE idfields_counter SET value = GREATEST(value, %s) WHERE name = %s",
                [grace, key],
            )
        epoch = _recorded(database, current)
    assert epoch is not None  # recorded just now
    return epoch


def _changed(identity: str, how: str, wait_ms: int) -> None:
    logger.warning(
        "the coordination database changed (%s, %s): no lease is claimed for %.1f s, and "
        "DecimalId moves to a new launch",
        identity,
        how,
        max(wait_ms, 0) / 1000,
    )


def _longest_ttl(database: Database) -> int:
    rows = database.execute(
        "SELECT value FROM idfields_counter WHERE name = %s", [LONGEST_TTL]
    ).rows
    return int(rows[0][0]) if rows else 0


def ttl_ceiling_ms(database: Database) -> int:
    """The longest lease ttl a claim may use (ms). A loss that may take the record of the
    longest ttl used with it (a restore, a crash under asynchronous commit) leaves this bound,
    recorded before, which every grace covers."""
    rows = database.execute("SELECT value FROM idfields_counter WHERE name = %s", [CEILING]).rows
    return int(rows[0][0]) if rows else DEFAULT_CEILING_MS


def set_lease_ttl_ceiling(database: Database, ttl_s: float) -> None:
    """Record the longest lease ttl that claims on this PostgreSQL database may use (default:
    60 s, the default ttl). After a possible loss of commits, new claims wait this long, or
    the longest ttl recorded where that is longer: set it to the longest ttl your deploys use.
    Raise it before a deploy with a longer ttl starts; a restore to a point before the raise
    brings back the lower ceiling, so raise it there again before any process starts."""
    if not 0.003 <= ttl_s <= 86_400:
        raise InvalidArgument(
            f"lease ttl ceiling ttl_s={ttl_s!r} is out of range; give 0.003..86400 seconds"
        )
    _write_durably(database, CEILING, round(ttl_s * 1000))


def _raise_longest_ttl(database: Database, ttl_ms: int) -> None:
    if _longest_ttl(database) < ttl_ms:
        _write_durably(database, LONGEST_TTL, ttl_ms, only_up=True)


def _write_durably(database: Database, name: str, value: int, only_up: bool = False) -> None:
    """The counter ``name`` set to ``value`` (``only_up``: never lowered), committed durably
    whatever the server's synchronous_commit: a grace after a crash reads it."""
    with durable(database):
        if not insert_if_absent(database, "idfields_counter", ("name", "value"), (name, value)):
            if only_up:
                database.execute(
                    "UPDATE idfields_counter SET value = %s WHERE name = %s AND value < %s",
                    [value, name, value],
                )
            else:
                database.execute(
                    "UPDATE idfields_counter SET value = %s WHERE name = %s", [value, name]
                )


def record_change_launch(database: Database, what: str) -> None:
    """Inside the caller's transaction: a new launch for DecimalId, when any launch is
    recorded: generator ids of the older launches that the database forgot may be in use."""
    if database.execute("SELECT MAX(id) FROM idfields_launch").rows[0][0] is not None:
        record_launch_here(database, f"{CHANGE_LABEL} ({what})"[:100])


def change_launch(database: Database) -> int:
    """The launch recorded at the database's last change of epoch (0 for none)."""
    top = database.execute(
        "SELECT MAX(id) FROM idfields_launch WHERE label LIKE %s", [CHANGE_LABEL + "%"]
    ).rows[0][0]
    return int(top or 0)
