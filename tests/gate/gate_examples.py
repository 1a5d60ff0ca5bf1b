"""Other people's models as a gate: SQLAlchemy's ORM examples and SQLModel's tutorial, taken
from their sdists, with our keys in place of their integer keys.

Each :class:`Example` names a file of an sdist (or a literal block of an ``.rst`` page) and the
edits a user makes to move it to idfields: every integer primary key becomes ``id_column()``
(SQLModel: ``id_field()``) and every column that holds one becomes BIGINT (SQLModel:
``id_foreign_key()``). An edit that no longer matches its source fails the gate, so a changed
upstream file is noticed, not silently run unedited. ``engine = create_engine(...)`` is pointed
at the gate's database (``$GATE_URL``); the example's own demo code then runs as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ENGINE = 'create_engine(__import__("os").environ["GATE_URL"])'
SA_IMPORT = "from idfields.sqlalchemy_ext import id_column\nfrom sqlalchemy import BigInteger\n"
SQLMODEL_IMPORT = (
    "from idfields.pydantic import Id\n"
    "from idfields.sqlalchemy_ext.sqlmodel import id_field, id_foreign_key\n"
)
# SQLModel's tutorial: the edits a SQLModel user makes, as regular expressions.
SQLMODEL_EDITS = (
    (r"int \| None = Field\(default=None, primary_key=True\)", "Id | None = id_field()"),
    (
        r'int \| None = Field\(default=None, foreign_key="([\w.]+)", primary_key=True\)',
        r'Id | None = id_foreign_key("\1", default=None, primary_key=True)',
    ),
    (
        r'int \| None = Field\(default=None, foreign_key="([\w.]+)"\)',
        r'Id | None = id_foreign_key("\1", default=None)',
    ),
    (r'int = Field\(foreign_key="([\w.]+)"\)', r'Id = id_foreign_key("\1")'),
    (r"create_engine\(sqlite_url, echo=True\)", ENGINE),
)
# What must not be left after the edits: an integer key or foreign key.
INTEGER_KEY = (
    r"(int[^=\n]*= Field\([^)\n]*(primary_key|foreign_key))|mapped_column\(primary_key=True"
)


@dataclass(frozen=True)
class Example:
    name: str
    package: str  # "sqlalchemy" or "sqlmodel": whose sdist
    path: str  # in the sdist; "page.rst#Section title" takes that section's first literal block
    edits: tuple[tuple[str, str], ...]  # (regular expression, replacement), each must match
    metadata: str  # the MetaData, as an expression in the models' module
    models_end: str  # the models are the source before this line's first match (the demo after)
    demo: str = ""  # appended when the source has no demo of its own
    every_edit: bool = True  # False: edits apply where they match (a shared list)

    def source(self, root: Path) -> str:
        """The example with our keys, and the gate's demo where it has none."""
        return self._edited(root) + self.demo

    def models(self, root: Path) -> str:
        """The example's models alone, for Alembic's ``target_metadata``."""
        text = self._edited(root)
        end = re.search(self.models_end, text, re.MULTILINE)
        return text[: end.start()] if end else text

    def _edited(self, root: Path) -> str:
        text = _read(root, self.path)
        for pattern, replacement in self.edits:
            text, count = re.subn(pattern, replacement, text)
            if not count and self.every_edit:
                raise AssertionError(f"{self.path}: the edit {pattern!r} matches nothing")
        left = re.search(INTEGER_KEY, text)
        if left:
            raise AssertionError(f"{self.path}: an integer key is left: {left.group(0)!r}")
        imports = SQLMODEL_IMPORT if self.package == "sqlmodel" else SA_IMPORT
        return _after_future(text, imports)


def _after_future(text: str, lines: str) -> str:
    """``lines`` inserted after the ``from __future__`` import (or at the top)."""
    marker = "from __future__ import annotations\n"
    if marker in text:
        return text.replace(marker, marker + lines, 1)
    return lines + text


def _read(root: Path, path: str) -> str:
    file, _, section = path.partition("#")
    text = (root / file).read_text()
    if not section:
        return text
    lines = text.splitlines()
    start = lines.index(section)
    opening = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith("::"))
    block = []
    for line in lines[opening + 1 :]:
        if line and not line.startswith("    "):
            break
        block.append(line[4:])
    return "\n".join(block).strip() + "\n"


SA_MAIN = r'^if __name__ == "__main__":'
SA_ENGINE = r"^engine = create_engine\("
INTPK = (
    r"intpk = Annotated\[int, mapped_column\(primary_key=True\)\]",
    "intpk = Annotated[int, id_column()]",
)
COMPANY_FK = (
    r'company_id: Mapped\[int\] = mapped_column\(ForeignKey\("company.id"\)\)',
    'company_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("company.id"))',
)
MODULE_ENGINE = (r'create_engine\("sqlite://", echo=True\)', ENGINE)

EXAMPLES = [
    Example(
        "many_to_many_table",
        "sqlalchemy",
        "doc/build/orm/basic_relationships.rst#Setting Bi-Directional Many-to-many",
        (
            (
                r"id: Mapped\[int\] = mapped_column\(primary_key=True\)",
                "id: Mapped[int] = id_column()",
            ),
            (
                r"from sqlalchemy import Integer\n",
                "from sqlalchemy import Integer\nfrom typing import List\n",
            ),
        ),
        "Base.metadata",
        r"\Z",  # a page of models only: the gate's demo is added after them
        demo=(
            "\n\n# The gate's own demo (the page shows models only).\n"
            "from sqlalchemy import create_engine\nfrom sqlalchemy.orm import Session\n\n"
            f"engine = {ENGINE}\n"
            "Base.metadata.create_all(engine)\n"
            "with Session(engine) as session, session.begin():\n"
            "    session.add(Parent(children=[Child(), Child()]))\n"
            "with Session(engine) as session:\n"
            "    (parent,) = session.query(Parent).all()\n"
            "    assert len(parent.children) == 2 and parent.children[0].parents == [parent]\n"
            "    assert parent.id > 2**53\n"
        ),
    ),
    Example(
        "association_object",
        "sqlalchemy",
        "examples/association/basic_association.py",
        (
            (
                r"order_id: Mapped\[int\] = mapped_column\(primary_key=True\)",
                "order_id: Mapped[int] = id_column()",
            ),
            (
                r"item_id: Mapped\[int\] = mapped_column\(primary_key=True\)",
                "item_id: Mapped[int] = id_column()",
            ),
            (
                r'mapped_column\(\n(\s+)ForeignKey\("(order|item)',
                r'mapped_column(\n\1BigInteger, ForeignKey("\2',
            ),
            (r'create_engine\("sqlite://"\)', ENGINE),
        ),
        "Base.metadata",
        SA_MAIN,
    ),
    Example(
        "adjacency_list_dataclasses",
        "sqlalchemy",
        "examples/adjacency_list/adjacency_list.py",
        (
            (
                r"id: Mapped\[int\] = mapped_column\(primary_key=True, init=False\)",
                "id: Mapped[int] = id_column(init=False)",
            ),
            (
                r'mapped_column\(\n(\s+)ForeignKey\("tree.id"\)',
                r'mapped_column(\n\1BigInteger, ForeignKey("tree.id")',
            ),
            # Not a key: MariaDB needs a VARCHAR's length (the example fails there unedited).
            (r"name: Mapped\[str\]\n", "name: Mapped[str] = mapped_column(String(50))\n"),
            (
                r"from sqlalchemy import select\n",
                "from sqlalchemy import select\nfrom sqlalchemy import String\n",
            ),
            MODULE_ENGINE,
        ),
        "Base.metadata",
        SA_MAIN,
    ),
    Example(
        "joined_inheritance",
        "sqlalchemy",
        "examples/inheritance/joined.py",
        (INTPK, COMPANY_FK, MODULE_ENGINE),
        "Base.metadata",
        SA_ENGINE,
    ),
    Example(
        "single_inheritance",
        "sqlalchemy",
        "examples/inheritance/single.py",
        (INTPK, COMPANY_FK, MODULE_ENGINE),
        "Base.metadata",
        SA_ENGINE,
    ),
    Example(
        "sqlmodel_many_to_many",
        "sqlmodel",
        "docs_src/tutorial/many_to_many/tutorial003.py",
        SQLMODEL_EDITS,
        "SQLModel.metadata",
        r"^sqlite_file_name = ",
        every_edit=False,
    ),
    Example(
        "sqlmodel_one_to_many",
        "sqlmodel",
        "docs_src/tutorial/relationship_attributes/back_populates/tutorial003.py",
        SQLMODEL_EDITS,
        "SQLModel.metadata",
        r"^sqlite_file_name = ",
        every_edit=False,
    ),
]
