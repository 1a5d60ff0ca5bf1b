"""A simulated next release of idfields: its layout renderer renders one byte differently.

A later release may change the renderer (a fix, a comment); what a project's migrations install,
and what a released SQL version installs, must not move with it. Tests take
:func:`next_release_renderer` and check that old migrations still import and replay, and that
``idfields.sql.load(<released version>)`` stays what it recorded.
"""

from __future__ import annotations

import pytest

from idfields.sql import layouts

#: The byte the next release adds to every function the renderer writes.
EXTRA = " "


@pytest.fixture
def next_release_renderer(monkeypatch: pytest.MonkeyPatch) -> str:
    """The renderer as the next release has it: one more space after the clock it writes in."""
    monkeypatch.setattr(layouts, "_CLOCK_US", layouts._CLOCK_US + EXTRA)
    return EXTRA
