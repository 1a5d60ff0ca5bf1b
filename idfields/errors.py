"""Every error idfields raises: one base class, one subclass per problem, each naming the fix.

They derive from ``ValueError`` or ``RuntimeError`` as well, so callers that already catch those
keep working; nothing here is an ``assert`` (``python -O`` would strip it). A mistake in the
deployment (:class:`ConfigurationError`) is never a ``ValueError``, ``TypeError`` or
``LookupError``: web frameworks read those, raised while resolving a URL, as "not found".
"""

from __future__ import annotations

__all__ = [
    "Base62Error",
    "ClockMovedBackwards",
    "ConfigurationError",
    "ConversionError",
    "GeneratorClosed",
    "IdFieldsError",
    "IdFieldsWarning",
    "InvalidArgument",
    "InvalidCharacterError",
    "LayoutError",
    "LayoutExhausted",
    "LockTimeout",
    "MissingPrivilege",
    "NarrowColumnWarning",
    "NodeError",
    "NodeNotConfigured",
    "NodeRangeOverlap",
    "PermutationError",
    "PermutationKeyError",
    "PublicIdError",
    "RedisIdError",
    "SQLiteTransactionOpen",
    "TablesMissing",
    "UnwidenedIdColumn",
    "UsageError",
    "ValueOutOfRange",
    "WrongArgumentType",
]


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


class UsageError(IdFieldsError, ValueError):
    """Bad command-line input; ``main`` prints it as one line and exits with status 2."""


class Base62Error(IdFieldsError, ValueError):
    """A value or string that this base62 codec cannot encode or decode."""


class InvalidCharacterError(Base62Error):
    """A string to decode holds a character outside ``0-9A-Za-z``.

    ``character`` and ``position`` (0-based) let callers point at the bad input.
    """

    def __init__(self, character: str, position: int) -> None:
        super().__init__(
            f"invalid base62 character {character!r} at position {position}; "
            "only 0-9, A-Z and a-z are allowed (check for stray punctuation, spaces "
            "or a base64 '-'/'_')"
        )
        self.character = character
        self.position = position


class PublicIdError(IdFieldsError, ValueError):
    """A string that is not a public ID this application made (wrong form, typo, other key).

    A ``ValueError`` on purpose: Django's URL converters and DRF answer it with 404."""


class PermutationError(ConfigurationError):
    """A keyed permutation cannot be built with the arguments given.

    Not a ``ValueError``: a bad key in production must fail the request loudly, where Django's
    URL resolver and DRF would answer a ``ValueError`` with 404."""


class PermutationKeyError(PermutationError):
    """A permutation key is missing, malformed or too weak to stand up to offline guessing."""


class SQLiteTransactionOpen(IdFieldsError, RuntimeError):
    """A node lease must be written while this thread holds SQLite's single write slot.

    Not a ``NodeError``: a renewal refused this way is retried later, outside the transaction.
    """


class RedisIdError(IdFieldsError, RuntimeError):
    """No Redis server of the tier gave IDs within the allowed tries (or waits)."""


class InvalidArgument(IdFieldsError, ValueError):
    """An argument's value cannot be used; the message names the values accepted."""


class WrongArgumentType(IdFieldsError, TypeError):
    """An argument of a type idfields does not take; the message names the type it takes."""


class ConversionError(IdFieldsError, RuntimeError):
    """A key conversion cannot go on safely; the message names the step to run first."""
