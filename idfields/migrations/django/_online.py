"""The online path as Django operations, for tables too large to rewrite under a lock.

GitLab's integer-to-bigint shape, one operation per step of
:mod:`idfields.migrations.convert.online` (each runs that module's statements, nothing of its
own), in migrations deployed one after another with the application live::

    # 0002, atomic = False: the backfill commits batch by batch, indexes build CONCURRENTLY
    AddBigintShadow("Item")            # ACCESS EXCLUSIVE, brief: new columns + sync triggers
    BackfillBigintShadow("Item")       # ROW EXCLUSIVE per batch of pages, then checks every row
    ValidateShadowConstraints("Item")  # SHARE UPDATE EXCLUSIVE: indexes CONCURRENTLY, VALIDATE
    # 0003, deployed with the code that supplies IDs (generation="app"):
    SwapToBigint("Item")               # ACCESS EXCLUSIVE, one short transaction

Every step but the swap is idempotent: after a failure, run the migration again (the swap is one
transaction: it happens entirely or not at all). Each takes a ``lock_timeout`` and gives up
rather than queue the application behind a lock it waits for. PostgreSQL only: on MariaDB/MySQL
they refuse, naming ``ConvertToKSortedId``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import ProjectState

from idfields.errors import InvalidArgument
from idfields.migrations import convert
from idfields.migrations.convert import online
from idfields.migrations.django._convert import ConvertToKSortedId, KeyOperation, run_steps

Pages = Mapping[tuple[str | None, str], int]


class _ShadowStep(KeyOperation):
    """A step before the swap: it changes the database only, never the model state."""

    dialects = ("postgresql",)
    needs_autocommit = False

    def steps(
        self, key: convert.KeyInfo, target: convert.Target, pages: Pages
    ) -> list[online.Step]:
        raise NotImplementedError

    def forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        if self.needs_autocommit and schema_editor.connection.in_atomic_block:
            raise InvalidArgument(
                f"{type(self).__name__}({self.model_name!r}) must run outside a transaction "
                "(batches commit one by one, indexes build CONCURRENTLY): set atomic = False "
                "on its migration"
            )
        with self.bounded(app_label, schema_editor, state):
            key = self.key(app_label, schema_editor, state)
            if key is None:
                return
            with schema_editor.connection.cursor() as cursor:
                query = convert.cursor_query(cursor)
                pages = online.table_pages(lambda sql: int(query(sql, [])[0][0]), key)
            target = convert.Target.of("snowflake", lock_timeout=self.lock_timeout)
            run_steps(schema_editor, self.steps(key, target, pages), key)

    def backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        """Nothing to undo here: AddBigintShadow's way back drops all that was built on it."""


class AddBigintShadow(_ShadowStep):
    """Add a bigint copy of the key and of every column referencing it, kept in sync by triggers.

    ACCESS EXCLUSIVE, briefly: a column with a constant default is a catalog change. Backwards
    drops the copies with their triggers, indexes and constraints.
    """

    name_suffix = "bigint_shadow"

    def steps(
        self, key: convert.KeyInfo, target: convert.Target, pages: Pages
    ) -> list[online.Step]:
        return [online.prepare(key, target)]

    def backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        with self.bounded(app_label, schema_editor, state):
            key = self.key(app_label, schema_editor, state)
            if key is not None:
                target = convert.Target.of("snowflake", lock_timeout=self.lock_timeout)
                run_steps(schema_editor, [online.remove(key, target)], key)

    def describe(self) -> str:
        return f"Add synced bigint copies of {self.model_name}'s key and its references"


class BackfillBigintShadow(_ShadowStep):
    """Copy each row's key into the bigint copies, ``batch_pages`` heap pages per transaction.

    ROW EXCLUSIVE, row locks on one batch at a time, so its migration needs ``atomic = False``.
    Then counts the rows out of sync and fails unless there are none. Under ``sqlmigrate`` the
    batches shown are those the table's size gives now.
    """

    needs_autocommit = True
    defaults: ClassVar[Mapping[str, object]] = {"lock_timeout": "5s", "batch_pages": 1000}
    name_suffix = "bigint_backfill"

    def __init__(self, model_name: str, batch_pages: int = 1000, lock_timeout: str = "5s") -> None:
        super().__init__(model_name, lock_timeout)
        online.check_batch_pages(batch_pages)
        self.batch_pages = batch_pages

    def steps(
        self, key: convert.KeyInfo, target: convert.Target, pages: Pages
    ) -> list[online.Step]:
        return [online.backfill(key, pages, self.batch_pages), online.verify(key)]

    def describe(self) -> str:
        return f"Backfill the bigint copies of {self.model_name}'s key, in batches"


class ValidateShadowConstraints(_ShadowStep):
    """Build the unique index on the new key and a copy of each index on an old column
    CONCURRENTLY (SHARE UPDATE EXCLUSIVE: writes go on), add each foreign key NOT VALID (brief
    SHARE ROW EXCLUSIVE), then VALIDATE it (SHARE UPDATE EXCLUSIVE). Needs ``atomic = False``.
    """

    needs_autocommit = True
    name_suffix = "bigint_validate"

    def steps(
        self, key: convert.KeyInfo, target: convert.Target, pages: Pages
    ) -> list[online.Step]:
        return [*online.index(key, target), *online.foreign_keys(key, target)]

    def describe(self) -> str:
        return f"Index and validate the bigint copies of {self.model_name}'s key and references"


class SwapToBigint(ConvertToKSortedId):
    """Put the bigint copies in place in one short ACCESS EXCLUSIVE transaction.

    The model's key becomes the layout's auto field, as with ``ConvertToKSortedId``; with
    ``generation="app"`` the key has no default from the commit on, so deploy the code that
    supplies IDs with this migration (an INSERT without one fails loudly, NOT NULL). Backwards
    is ``ConvertToKSortedId``'s: AUTO_INCREMENT again, its sequence past max(id).
    """

    dialects = ("postgresql",)
    name_suffix = "bigint_swap"

    def forwards_steps(self, key: convert.KeyInfo, target: convert.Target) -> list[online.Step]:
        online.check_dialect(key)
        return [online.swap(key, target)]

    def describe(self) -> str:
        return f"Swap {self.model_name}'s key for its bigint copy ({self.layout} IDs)"
