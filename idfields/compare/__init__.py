"""``idfields compare``: AUTO_INCREMENT against k-sorted IDs (app and DB side) and UUIDs.

Core side: DB-API drivers only, no Django or SQLAlchemy. A command line (``idfields compare``,
``manage.py idfields_compare``), with no Python API: the modules here are private.
"""

from __future__ import annotations

__all__: list[str] = []
