"""The ``IDFIELDS`` setting, read lazily (never at import time) and validated by system checks.

Every key is optional::

    IDFIELDS = {
        "LAYOUT": "snowflake",        # layout of the auto fields (DEFAULT_AUTO_FIELD drop-ins)
        "NODE_SOURCE": "lease",       # "lease" (database), "static", "env" or "development"
        "NODE": None,                 # static node id (NODE_SOURCE "static"; implied when set)
        "DATABASE": "default",        # alias holding the lease / launch / counter tables
        "LEASE_TTL": 60,              # seconds a node lease lives without renewal
        "MAX_SKEW": 1.0,              # seconds a generator may run ahead of the clock
        "JS_SAFE": False,             # ask for IDs below 2**53 (checks warn on wider layouts)
        "IDS_AS_STRINGS": False,      # serialize ID fields as strings for JavaScript clients
        "LAYOUTS": {},                # user layouts: name -> Layout or "dotted.path.TO_LAYOUT"
        "GENERATORS": {},             # layout name -> factory of another ID source, e.g.
                                      # "proj.ids.redis_client" returning a RedisIdClient
        "PERMUTATION_KEY": None,      # public IDs: a random key (hex/base64), or a list of
                                      # them newest first (rotation); see idfields.codecs._keys
        "DATABASE_FUNCTIONS": True,   # migrations install idfields.next_*() in PostgreSQL;
                                      # False: IDs made in Python only, no CREATE SCHEMA
    }

Read through :func:`get_settings`, whose value the ``setting_changed`` signal rebuilds in the
thread that changed the setting (tests use ``override_settings``). A value of the wrong type or
out of range is replaced by its default and listed in ``IdFieldsSettings.problems``: the system
checks report each one (``idfields.E008``), and the registry refuses to build a generator from
such settings, so a typo never fails later as a bare ``TypeError`` or ``KeyError``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NoReturn

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from idfields.errors import ConfigurationError, WrongArgumentType
from idfields.layouts import BUILTIN_LAYOUTS, Layout
from idfields.nodes import development_mode

# Implementation: nothing here is API (Django reaches this module through the app).
__all__: list[str] = []

NODE_SOURCES = ("lease", "static", "env", "development")


@dataclass(frozen=True)
class IdFieldsSettings:
    """The resolved IDFIELDS setting; raw values are kept, validation is the checks' job."""

    layout: str = "snowflake"
    node_source: str = "lease"
    node: int | None = None
    database: str = "default"
    lease_ttl: float = 60.0
    max_skew: float = 1.0
    js_safe: bool = False
    ids_as_strings: bool = False
    layouts: dict[str, Any] = field(default_factory=dict)
    generators: dict[str, Any] = field(default_factory=dict)
    permutation_key: str | bytes | Sequence[str | bytes] | None = field(default=None, repr=False)
    database_functions: bool = True
    unknown_keys: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()  # values refused (and replaced by defaults), each with a fix

    def __reduce__(self) -> NoReturn:
        raise WrongArgumentType(
            "IdFieldsSettings cannot be pickled, because the pickle would carry the permutation "
            "key; call get_settings() where the settings are needed"
        )

    def __copy__(self) -> IdFieldsSettings:
        return self  # frozen, so a copy may share it (and copying must not go through pickle)

    def __deepcopy__(self, memo: dict[int, object]) -> IdFieldsSettings:
        return self

    def resolve_layout(self, name: str | Layout) -> Layout:
        """A built-in or user layout by name (raises ConfigurationError naming the fix)."""
        if isinstance(name, Layout):
            return name
        if name in self.layouts:
            value = self.layouts[name]
            layout = import_string(value) if isinstance(value, str) else value
            if not isinstance(layout, Layout):
                raise ConfigurationError(
                    f"IDFIELDS['LAYOUTS'][{name!r}] is {layout!r}, not an idfields Layout; "
                    "point it at a Layout instance"
                )
            return layout
        if name in BUILTIN_LAYOUTS:
            return BUILTIN_LAYOUTS[name]
        known = ", ".join([*BUILTIN_LAYOUTS, *self.layouts])
        raise ConfigurationError(f"unknown idfields layout {name!r}; choose one of {known}")


_KEYS = {
    "LAYOUT": "layout",
    "NODE_SOURCE": "node_source",
    "NODE": "node",
    "DATABASE": "database",
    "LEASE_TTL": "lease_ttl",
    "MAX_SKEW": "max_skew",
    "JS_SAFE": "js_safe",
    "IDS_AS_STRINGS": "ids_as_strings",
    "LAYOUTS": "layouts",
    "GENERATORS": "generators",
    "PERMUTATION_KEY": "permutation_key",
    "DATABASE_FUNCTIONS": "database_functions",
}


def _number(low: float, high: float, unit: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"give a number of {unit} in {low:g}..{high:g}"
        return None if low <= value <= high else f"give {unit} in {low:g}..{high:g}"

    return check


def _kind(kinds: tuple[type, ...], wanted: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
        return None if ok else f"give {wanted}"

    return check


def _mapping(values: Callable[[Any], bool], wanted: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            return f"give a dict of layout names to {wanted}"
        bad = [name for name, item in value.items() if not values(item)]
        return f"give {wanted} for {', '.join(map(repr, bad))}" if bad else None

    return check


# What each value must be; ranges that depend on the layout (NODE) are the checks' job.
_VALID: dict[str, Callable[[Any], str | None]] = {
    "layout": _kind((str,), "a layout name (a string)"),
    "node_source": _kind((str,), f"one of {', '.join(map(repr, NODE_SOURCES))}"),
    "node": _kind((int, type(None)), "a whole number (the node id) or None"),
    "database": _kind((str,), "a DATABASES alias (a string)"),
    "lease_ttl": _number(0.003, 86_400, "seconds"),
    "max_skew": _number(0, 3_600, "seconds"),
    "js_safe": _kind((bool,), "True or False"),
    "ids_as_strings": _kind((bool,), "True or False"),
    "layouts": _mapping(lambda v: isinstance(v, Layout | str), "a Layout or its dotted path"),
    "generators": _mapping(
        lambda v: isinstance(v, str) or callable(v), "a dotted path or callable"
    ),
    "permutation_key": lambda value: (
        None
        if isinstance(value, str | bytes | type(None))
        or (isinstance(value, list | tuple) and all(isinstance(k, str | bytes) for k in value))
        else "give a key string (hex or base64), or a list of them newest first"
    ),
    "database_functions": _kind((bool,), "True or False"),
}
_SETTING_OF = {attribute: key for key, attribute in _KEYS.items()}
_SECRET = frozenset({"permutation_key"})  # never quoted back, even when of the wrong type


@lru_cache(maxsize=1)
def get_settings() -> IdFieldsSettings:
    raw = getattr(django_settings, "IDFIELDS", None)
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        return IdFieldsSettings(
            problems=(
                f"IDFIELDS = {raw!r} is a {type(raw).__name__}, not a dict; write it as a dict, "
                'e.g. IDFIELDS = {"NODE_SOURCE": "static", "NODE": 17}',
            )
        )
    values = {_KEYS[key]: value for key, value in raw.items() if key in _KEYS}
    problems = []
    for attribute, value in list(values.items()):
        fix = _VALID[attribute](value)
        if fix is not None:
            del values[attribute]
            setting = _SETTING_OF[attribute]
            shown = "<hidden>" if attribute in _SECRET else repr(value)
            problems.append(
                f"IDFIELDS[{setting!r}] = {shown} ({type(value).__name__}) is not valid; {fix}"
            )
    if "node" in values and values["node"] is not None and "node_source" not in values:
        values["node_source"] = "static"
    if "node_source" not in values and development_mode():
        values["node_source"] = "development"
    unknown = tuple(sorted(str(key) for key in set(raw) - set(_KEYS)))
    return IdFieldsSettings(**values, unknown_keys=unknown, problems=tuple(problems))


def refresh_settings() -> IdFieldsSettings:
    """Read ``IDFIELDS`` again now. Called in the thread that changed it (``setting_changed``):
    ``override_settings`` swaps Django's settings in two steps, and a thread reading a setting
    between them meets None for all of them, so other threads only ever use this snapshot."""
    get_settings.cache_clear()
    return get_settings()


@receiver(setting_changed)
def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting == "IDFIELDS":
        refresh_settings()
