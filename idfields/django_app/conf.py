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
        "PERMUTATION_KEY": None,      # key of the public, non-enumerable ID permutation
    }

Read through :func:`get_settings`, which rebuilds its value when Django's ``setting_changed``
fires (tests use ``override_settings``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NoReturn

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from idfields.layouts import BUILTIN_LAYOUTS, Layout
from idfields.nodes import development_mode

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
    permutation_key: str | bytes | None = field(default=None, repr=False)  # never shown
    unknown_keys: tuple[str, ...] = ()

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "IdFieldsSettings cannot be pickled, because the pickle would carry the permutation "
            "key; call get_settings() where the settings are needed"
        )

    def __copy__(self) -> IdFieldsSettings:
        return self  # frozen, so a copy may share it (and copying must not go through pickle)

    def __deepcopy__(self, memo: dict[int, object]) -> IdFieldsSettings:
        return self

    def resolve_layout(self, name: str | Layout) -> Layout:
        """A built-in or user layout by name (raises LayoutError/KeyError naming the fix)."""
        if isinstance(name, Layout):
            return name
        if name in self.layouts:
            value = self.layouts[name]
            layout = import_string(value) if isinstance(value, str) else value
            if not isinstance(layout, Layout):
                raise TypeError(
                    f"IDFIELDS['LAYOUTS'][{name!r}] is {layout!r}, not an idfields Layout; "
                    "point it at a Layout instance"
                )
            return layout
        if name in BUILTIN_LAYOUTS:
            return BUILTIN_LAYOUTS[name]
        known = ", ".join([*BUILTIN_LAYOUTS, *self.layouts])
        raise KeyError(f"unknown idfields layout {name!r}; choose one of {known}")


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
}


@lru_cache(maxsize=1)
def get_settings() -> IdFieldsSettings:
    raw: dict[str, Any] = dict(getattr(django_settings, "IDFIELDS", {}) or {})
    values = {_KEYS[key]: value for key, value in raw.items() if key in _KEYS}
    if "node" in values and values["node"] is not None and "node_source" not in values:
        values["node_source"] = "static"
    if "node_source" not in values and development_mode():
        values["node_source"] = "development"
    unknown = tuple(sorted(set(raw) - set(_KEYS)))
    return IdFieldsSettings(**values, unknown_keys=unknown)


@receiver(setting_changed)
def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting == "IDFIELDS":
        get_settings.cache_clear()
