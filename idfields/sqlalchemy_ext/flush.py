"""ORM flush: ``id_column`` keys go into each pending object before the INSERT is planned.

Left to the column default, the ID is made inside the INSERT, so the unit of work does not know
the primary keys when it plans the statement: it asks for them back (``INSERT ... RETURNING``
through insertmanyvalues, one large statement the driver parses) and copies them onto the
objects afterwards. Filled in the mapper's ``before_insert`` event, as SQLAlchemy's own
post-fetch would write them, the keys are there at planning time and the flush is a plain
executemany (a prepared statement per row in psycopg's pipeline, the driver's batching on
MariaDB): about 13% fewer client instructions per row on PostgreSQL than the default's path,
and fewer than an ``Identity()`` key's. The ID is made at the same moment of the flush, in
the same order, by the same default (reconfigure and fork rules included). A key the object
already holds is kept; ``session.execute(insert(Model), rows)`` and Core inserts, which have no
objects, keep the column default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Column, event
from sqlalchemy.orm import InstanceState, Mapper

from idfields.sqlalchemy_ext.checks import INFO_KEY

Fill = tuple[str, Callable[[object], int]]


def _fills(mapper: Mapper[Any]) -> tuple[Fill, ...]:
    """(attribute key, ID default) of every ``id_column`` made in Python that ``mapper`` maps."""
    found: dict[str, Callable[[object], int]] = {}
    for column in mapper.columns:
        default = getattr(column, "default", None)
        if isinstance(column, Column) and INFO_KEY in column.info and default is not None:
            found.setdefault(mapper.get_property_by_column(column).key, default.arg)
    return tuple(found.items())


def _install(mapper: Mapper[Any], class_: type) -> None:
    """mapper_configured: give a mapper with ``id_column`` keys its ``before_insert`` fill."""
    fills = _fills(mapper)
    if not fills:
        return

    def fill_ids(mapper: Mapper[Any], connection: object, state: InstanceState[Any]) -> None:
        values = state.dict
        for key, make in fills:
            if values.get(key) is None:
                values[key] = make(None)

    event.listen(mapper, "before_insert", fill_ids, raw=True, insert=True)  # before the app's


event.listen(Mapper, "mapper_configured", _install)
