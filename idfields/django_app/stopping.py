"""Nodes given back when a Django process is stopped by SIGTERM.

- Every process that loads the app: :func:`idfields.shutdown.release_on_signals` from the main
  thread, so SIGTERM releases the nodes of a process whose leases were claimed in other
  threads (``runserver --noreload`` serves each request in a thread of its own, where a lease
  arms nothing). It chains: a server's own handler, installed before or after, still decides.
- ``runserver`` with its autoreloader: Django's watching parent answers SIGTERM by exiting,
  and kills the serving child, which holds the leases, with SIGKILL on its way out; no handler
  runs there. The parent, at its exit, frees the leases of holders it can prove dead (that
  child), fenced at their expiry (:func:`idfields.coordination.free_dead_holders`).
"""

from __future__ import annotations

import atexit
import logging
import os
import sys

from django.utils.autoreload import DJANGO_AUTORELOAD_ENV

from idfields import shutdown
from idfields.coordination import free_dead_holders
from idfields.django_app.conf import get_settings
from idfields.django_app.sources import coordination_database

# Implementation: nothing here is API (Django reaches this module through the app).
__all__: list[str] = []

logger = logging.getLogger("idfields.django_app")


def install() -> None:
    """From the app's ``ready()``."""
    shutdown.release_on_signals()
    if _is_reloader_parent():
        atexit.register(free_killed_child_leases)


def _is_reloader_parent() -> bool:
    # Django gives the reloader's parent no hook: its command line and the variable it sets
    # for the child only are what tell it apart.
    return (
        sys.argv[1:2] == ["runserver"]
        and "--noreload" not in sys.argv
        and os.environ.get(DJANGO_AUTORELOAD_ENV) != "true"
    )


def free_killed_child_leases() -> None:
    """Free the leases the killed child held (and any other provably dead holder's)."""
    if get_settings().node_source != "lease":
        return
    database = coordination_database()
    try:
        freed = free_dead_holders(database)
    except Exception:  # unreachable or not migrated: the leases lapse at their expiry
        logger.debug("could not free the leases of dead holders", exc_info=True)
        return
    finally:
        database.close()
    if freed:
        logger.info("freed %d node lease(s) of the stopped runserver process", freed)
