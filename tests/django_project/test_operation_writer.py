"""The migration files Django writes for our operations import the public package, and read back.

Django's ``OperationWriter`` writes ``<operation class's __module__>.<deconstructed name>(...)``,
so a private defining module, or a dotted name from ``deconstruct()``, would end up in users'
migration files (or make them fail to import).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db.migrations.writer import OperationWriter

from idfields import sql
from idfields.layouts import Layout, Node, Sequence, Timestamp
from idfields.migrations import django as operations

NARROW = Layout("narrow", [Timestamp(41, unit="ms"), Node(10), Sequence(4)])
EXAMPLES: dict[str, Callable[[], Any]] = {
    "AddBigintShadow": lambda: operations.AddBigintShadow("Order"),
    "BackfillBigintShadow": lambda: operations.BackfillBigintShadow("Order", batch_pages=10),
    "ConvertToKSortedId": lambda: operations.ConvertToKSortedId("Order", layout="snowflake"),
    "InstallIdFunctions": lambda: operations.InstallIdFunctions(sql.VERSION),
    "InstallLayoutFunctions": lambda: operations.InstallLayoutFunctions(layout=NARROW),
    "SwapToBigint": lambda: operations.SwapToBigint("Order"),
    "ValidateShadowConstraints": lambda: operations.ValidateShadowConstraints("Order"),
    "WidenObjectId": lambda: operations.WidenObjectId("gfkapp", "TaggedItem"),
}


def test_every_operation_has_an_example() -> None:
    assert sorted(EXAMPLES) == sorted(operations.__all__)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_written_operation_imports_the_public_package_and_reads_back(name: str) -> None:
    operation = EXAMPLES[name]()
    source, imports = OperationWriter(operation, indentation=0).serialize()
    assert imports == {"import idfields.migrations.django"}
    assert source.startswith(f"idfields.migrations.django.{name}(")
    namespace: dict[str, Any] = {}
    exec("\n".join(imports) + "\nrebuilt = " + source.rstrip(","), namespace)
    assert namespace["rebuilt"].deconstruct() == operation.deconstruct()
