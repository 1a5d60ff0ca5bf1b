"""Every error idfields raises: one base class, one subclass per problem, each naming the fix.

They derive from ``ValueError`` or ``RuntimeError`` as well, so callers that already catch those
keep working; nothing here is an ``assert`` (``python -O`` would strip it). A mistake in the
deployment (:class:`ConfigurationError`) is never a ``ValueError``, ``TypeError`` or
``LookupError``: web frameworks read those, raised while resolving a URL, as "not found".
"""

from __future__ import annotations


class IdFieldsError(Exception):
    """Base class of every idfields error."""


class ConfigurationError(IdFieldsError, RuntimeError):
    """A setting or secret idfields needs is missing or wrong: the process cannot serve."""


class LayoutError(IdFieldsError, ValueError):
    """A layout definition is invalid (raised at construction, never while issuing IDs)."""


class ValueOutOfRange(IdFieldsError, ValueError):
    """A field value or an ID lies outside what the layout can hold."""


class NodeError(IdFieldsError, RuntimeError):
    """No node (or generator/run id) could be had, or the one given cannot be used."""


class NodeNotConfigured(NodeError):
    """No node source is configured where several processes may run."""


class GeneratorClosed(NodeError):
    """The generator was closed: its node is given back, so it never issues again."""


class ClockMovedBackwards(IdFieldsError, RuntimeError):
    """The clock is further behind the last issued ID than the generator may bridge."""


class LayoutExhausted(IdFieldsError, RuntimeError):
    """The layout's timestamp (or its space of generator/run ids) has run out."""


class TablesMissing(NodeError):
    """The idfields tables (node leases, launches, counters) are not in the database."""


class MissingPrivilege(IdFieldsError, PermissionError):
    """The migrating role may not do what installing idfields needs; the message names the grant
    (or the setting that makes it unnecessary)."""


class IdFieldsWarning(UserWarning):
    """Base class of every idfields warning."""


class NarrowColumnWarning(IdFieldsWarning):
    """A column that must hold idfields keys is narrower than BIGINT (a foreign key, say)."""


class LockTimeout(IdFieldsError, RuntimeError):
    """A conversion gave up waiting for a lock; the message names the sessions holding it."""


class UnwidenedIdColumn(IdFieldsWarning):
    """An integer column looks as if it holds IDs of the key being converted, but is neither a
    foreign key nor listed to be widened with it (Alembic's ``also=[...]``)."""


class NodeRangeOverlap(IdFieldsError, ValueError):
    """Two databases whose IDs may meet record node ranges that share nodes."""
