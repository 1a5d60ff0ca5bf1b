"""Alembic operations of idfields, registered on import.

In ``env.py`` (or the migration itself) import this package, then write migrations against the
typed ``op`` it exports, which is Alembic's own ``op`` plus our operations for mypy::

    from idfields.migrations.alembic import op

    def upgrade() -> None:
        op.create_idfields_tables()

Alembic types ``alembic.op`` from a fixed stub, so plugins cannot add to it; importing ``op``
from here is what lets mypy see ``op.create_idfields_tables()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from alembic import op as _alembic_op

# Each module below registers its operations with Alembic when imported.
from idfields.migrations.alembic import _convert, _functions, _tables  # noqa: F401
from idfields.migrations.alembic._autogenerate import process_revision_directives

if TYPE_CHECKING:
    from typing import Any

    from alembic.operations import Operations

    from idfields.sql.layouts import LayoutLike

    class IdFieldsOperations(Operations):
        """Alembic's operations plus ours, as mypy sees ``op``."""

        # tables.py
        def create_idfields_tables(self) -> None: ...
        def drop_idfields_tables(self) -> None: ...

        # functions.py
        def install_id_functions(
            self, version: str, lease_schema: str | None = None, nodes: object = None
        ) -> None: ...
        def drop_id_functions(self, version: str) -> None: ...
        def install_layout_functions(
            self, layout: LayoutLike, sha256: str | None = None
        ) -> None: ...
        def drop_layout_functions(self, layout: LayoutLike, sha256: str | None = None) -> None: ...

        # convert.py
        def convert_to_ksorted_id(self, table: str, column: str = "id", **options: Any) -> None: ...
        def restore_auto_increment(
            self, table: str, column: str = "id", **options: Any
        ) -> None: ...
        def add_bigint_shadow(self, table: str, column: str = "id", **options: Any) -> None: ...
        def remove_bigint_shadow(self, table: str, column: str = "id", **options: Any) -> None: ...
        def backfill_bigint_shadow(
            self, table: str, column: str = "id", **options: Any
        ) -> None: ...
        def validate_shadow_constraints(
            self, table: str, column: str = "id", **options: Any
        ) -> None: ...
        def swap_to_bigint(self, table: str, column: str = "id", **options: Any) -> None: ...


op = cast("IdFieldsOperations", _alembic_op)

__all__ = ["op", "process_revision_directives"]
