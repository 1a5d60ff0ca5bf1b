"""idfields metrics as OpenTelemetry instruments (the ``otel`` extra: the API only).

Call :func:`instrument` once at start-up; export with whatever SDK and exporter the application
configured (the README shows Prometheus). Events become counters and histograms; issued IDs,
run-ahead and node room are observed at collection time, so nothing runs per ID.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from idfields._events import logger
from idfields.coordination import Database
from idfields.coordination._report import NodeRoom, launch_room, node_room
from idfields.errors import WrongArgumentType
from idfields.metrics import GeneratorStats, generator_stats, live_layouts, subscribe

__all__ = ["instrument"]

_COUNTED = {
    "lease.claimed": "idfields.lease.claims",
    "lease.renewed": "idfields.lease.renewals",
    "lease.lost": "idfields.lease.losses",
    "lease.failed": "idfields.lease.failures",
    "clock.backwards": "idfields.clock.backwards",
}
_TIMED = {
    "lease.claimed": "idfields.lease.claim.duration",
    "lease.renewed": "idfields.lease.renewal.duration",
    "clock.wait": "idfields.clock.wait.duration",
}


def instrument(
    meter_provider: metrics.MeterProvider | None = None,
    *,
    database: Database | Callable[[], Database] | None = None,
) -> Callable[[], None]:
    """Report idfields through ``meter_provider`` (default: the global one); returns the
    function that stops the event instruments.

    With ``database`` (the coordination database, e.g. the ``SQLAlchemyDatabase`` the lease
    source uses, or a function returning it, e.g. Django's
    ``idfields.django_app.sources.coordination_database``), each collection also reads the nodes
    in use and free of every layout with a live generator here, and the DecimalId generator ids
    left. Collections reuse that database's connections: pass one adapter, not a function that
    makes a new one each time.
    """
    room = None if database is None else _RoomObserver(_reader(database))  # refused here
    provider = meter_provider or metrics.get_meter_provider()
    meter = provider.get_meter("idfields")
    counters = {e: meter.create_counter(n, unit="{event}") for e, n in _COUNTED.items()}
    histograms = {e: meter.create_histogram(n, unit="s") for e, n in _TIMED.items()}

    def record(event: str, value: float, attributes: Mapping[str, str]) -> None:
        if event in counters:
            counters[event].add(1, dict(attributes))
        if event in histograms:
            histograms[event].record(value, dict(attributes))

    meter.create_observable_counter(
        "idfields.ids.issued",
        [_per_generator(lambda s: s.issued)],
        unit="{id}",
        description="IDs issued per generator",
    )
    meter.create_observable_gauge(
        "idfields.clock.run_ahead",
        [_per_generator(lambda s: s.run_ahead_s)],
        unit="s",
        description="last ID's time - clock",
    )
    if room is not None:
        meter.create_observable_gauge("idfields.nodes.in_use", [room.in_use], unit="{node}")
        meter.create_observable_gauge("idfields.nodes.free", [room.free], unit="{node}")
        meter.create_observable_gauge(
            "idfields.generator_ids.left", [room.generator_ids_left], unit="{id}"
        )
    return subscribe(record)


def _reader(database: Database | Callable[[], Database]) -> Callable[[], Database]:
    """The function each collection calls for the database; anything else fails here, at start,
    rather than at every collection."""
    if callable(database):
        return database  # Django's coordination_database: follows the settings
    if callable(getattr(database, "execute", None)) and callable(getattr(database, "atomic", None)):
        return lambda: database
    raise WrongArgumentType(
        f"instrument(database=...) takes the coordination database (SQLAlchemy: the "
        f"SQLAlchemyDatabase your LeaseSource uses) or a function returning it (Django: "
        f"idfields.django_app.sources.coordination_database), not {database!r}"
    )


def _per_generator(
    read: Callable[[GeneratorStats], float],
) -> Callable[[CallbackOptions], Iterable[Observation]]:
    """An observable callback reading one figure of every live generator."""

    def observe(options: CallbackOptions) -> Iterable[Observation]:
        for stats in generator_stats():
            yield Observation(read(stats), {"layout": stats.layout, "node": stats.node})

    return observe


class _RoomObserver:
    """Node and launch room of the layouts this process issues, read at each collection."""

    def __init__(self, database: Callable[[], Database]) -> None:
        self._database = database

    def _nodes(self) -> Iterator[tuple[str, NodeRoom]]:
        for layout in live_layouts():
            if layout.timestamp is not None:
                with _scrape_guard("idfields.nodes", layout.name):
                    yield layout.lease_key, node_room(self._database(), layout)

    def in_use(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(room.in_use, {"layout": name}) for name, room in self._nodes()]

    def free(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(room.free, {"layout": name}) for name, room in self._nodes()]

    def generator_ids_left(self, options: CallbackOptions) -> Iterable[Observation]:
        for layout in live_layouts():
            if layout.timestamp is None:
                with _scrape_guard("idfields.generator_ids.left", layout.name):
                    room = launch_room(self._database(), layout)
                    yield Observation(
                        room.generators_left, {"layout": layout.lease_key, "launch": room.launch}
                    )


@contextmanager
def _scrape_guard(metric: str, layout: str) -> Iterator[None]:
    """A database that cannot be read skips the point: a scrape must not fail the exporter."""
    try:
        yield
    except Exception as error:
        logger.warning("%s not read for layout %s: %s", metric, layout, error)
