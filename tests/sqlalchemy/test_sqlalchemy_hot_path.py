"""What SQLAlchemy runs per row for an ``id_column``: the ORM flush knows the keys before it plans
the INSERT, and the column default costs no Python frame.

The keys are filled at ``before_flush`` (``idfields.sqlalchemy_ext._flush``), not inside the
flush's INSERT: so the unit of work sends a plain executemany instead of one insertmanyvalues
statement (a VALUES group per row, which psycopg parses and SQLAlchemy renders per flush),
``before_insert`` listeners see the key, and no row runs the default's Python function.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import sqlalchemy as sa
from sa_models import Base, Item, core_items
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from idfields.generators import COMPILED
from idfields.layouts import Layout
from idfields.nodes import Assignment, StaticNode
from idfields.sqlalchemy_ext import configure, get_generator, id_column


@pytest.fixture
def db(engine: sa.Engine) -> Iterator[sa.Engine]:
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    yield engine
    Base.metadata.drop_all(engine)


def inserts(engine: sa.Engine, run: Any) -> list[str]:
    """The INSERT statements ``run()`` sends through ``engine``."""
    sent: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT"):
            sent.append(statement)

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        run()
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    return sent


class AppSession(Session):
    """An application's own Session class: the fill listens on every Session."""


@pytest.mark.parametrize("session_class", [Session, AppSession])
def test_the_orm_flush_knows_the_keys_before_the_insert(
    db: sa.Engine, session_class: type[Session]
) -> None:
    items = [Item(name=f"f{i:02d}") for i in range(30)]
    kept = Item(id=7, name="kept")
    unset = Item(id=None, name="unset")  # None is "no value": the default's to fill
    seen: dict[str, int | None] = {}

    @sa.event.listens_for(Item, "before_insert")
    def look(mapper: object, connection: object, target: Item) -> None:
        seen[target.name] = target.id

    def flush() -> None:
        with session_class(db, expire_on_commit=False) as session:
            session.add_all([*items, kept, unset])
            session.commit()

    try:
        sent = inserts(db, flush)
    finally:
        sa.event.remove(Item, "before_insert", look)
    # a one-row statement the driver repeats (its executemany), not a VALUES group per row
    assert sent and all("), (" not in statement for statement in sent)
    ids = [item.id for item in items]
    assert ids == sorted(set(ids)) and ids[0] > 2**53  # made in add order
    assert kept.id == 7 and unset.id > ids[-1]
    everything = {item.name: item.id for item in [*items, kept, unset]}
    assert seen == everything  # the key is there for the application's listeners too
    with db.connect() as conn:
        stored = {name: key for name, key in conn.execute(sa.select(Item.name, Item.id))}
    assert stored == everything


def test_an_object_added_after_the_fill_gets_the_column_default(db: sa.Engine) -> None:
    """A ``before_flush`` listener of the application adding an object after ours ran."""
    late = Item(name="late")

    def add_late(session: Session, flush_context: object, instances: object) -> None:
        if late not in session:
            session.add(late)

    with Session(db, expire_on_commit=False) as session:
        sa.event.listen(session, "before_flush", add_late)
        session.add(Item(name="early"))
        session.commit()
    assert late.id > 2**53
    with db.connect() as conn:
        assert conn.scalar(sa.select(Item.id).where(Item.name == "late")) == late.id


class InheritBase(DeclarativeBase):
    pass


class Party(InheritBase):
    __tablename__ = "idf_sa_party"
    id: Mapped[int] = id_column(primary_key=True)
    kind: Mapped[str] = mapped_column(sa.String(20))
    ref: Mapped[int] = id_column(primary_key=False)
    __mapper_args__ = {"polymorphic_on": "kind", "polymorphic_identity": "party"}


class Person(Party):
    __tablename__ = "idf_sa_person"
    id: Mapped[int] = mapped_column(sa.ForeignKey(Party.id), primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(20))
    __mapper_args__ = {"polymorphic_identity": "person"}


def test_joined_inheritance_and_a_second_id_column_are_filled(engine: sa.Engine) -> None:
    InheritBase.metadata.drop_all(engine)
    InheritBase.metadata.create_all(engine)
    try:
        with Session(engine, expire_on_commit=False) as session:
            people = [Person(name=f"p{i}") for i in range(3)]
            party = Party(ref=5)
            session.add_all([*people, party])
            session.commit()
        with engine.connect() as conn:
            rows = conn.execute(sa.select(Party.id, Party.ref).order_by(Party.id)).all()
            person_ids = list(conn.scalars(sa.select(Person.__table__.c.id)))
    finally:
        InheritBase.metadata.drop_all(engine)
    assert sorted(person_ids) == sorted(person.id for person in people)
    assert party.ref == 5 and all(person.ref > 2**53 for person in people)
    assert len({row.id for row in rows} | {row.ref for row in rows}) == 8


def python_frames_per_row(run: Any, rows: int) -> dict[str, float]:
    """Python functions entered while ``run()`` inserts ``rows`` rows, per row, by name."""
    seen: dict[str, int] = {}

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            code = frame.f_code
            name = f"{Path(code.co_filename).parent.name}/{code.co_name}"
            seen[name] = seen.get(name, 0) + 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return {name: count / rows for name, count in seen.items()}


def test_the_column_default_is_called_per_row_without_a_wrapper(db: sa.Engine) -> None:
    rows = [{"name": f"w{i:04d}"} for i in range(300)]
    with db.begin() as conn:
        conn.execute(core_items.insert(), rows[:3])  # compiled, and the slot bound

    def insert() -> None:
        with db.begin() as conn:
            conn.execute(core_items.insert(), rows)

    frames = python_frames_per_row(insert, len(rows))
    assert frames.get("sql/<lambda>", 0) < 0.1  # SQLAlchemy's lambda ctx: fn() is not there
    ours = sum(count for name, count in frames.items() if name.startswith("sqlalchemy_ext/"))
    assert ours == (0 if COMPILED else 1)  # compiled: not one Python frame of ours per row


def test_the_column_default_after_its_generator_was_closed_by_hand() -> None:
    configure(source=lambda layout: StaticNode(11))
    default = Item.__table__.c.id.default.arg  # type: ignore[union-attr]
    first = default(None)
    old = get_generator("snowflake")
    old.close()  # not through configure(): the default still holds it, and must let it go
    after = [default(None) for _ in range(3)]
    assert first < after[0] < after[1] < after[2]
    assert get_generator("snowflake") is not old


class PerProcess:
    """A lease-like source: a fresh node for every claim, whichever process asks."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def acquire(self, layout: Layout) -> Assignment:
        with self.path.open("a+") as claims:
            claims.write("x")
            claims.seek(0)
            node = len(claims.read())
        return Assignment({layout.node_fields[0].name: node})


@pytest.mark.slow
def test_the_column_default_bound_before_fork_never_repeats_in_the_child(tmp_path: Path) -> None:
    source = PerProcess(tmp_path / "claims")
    configure(source=lambda layout: source)
    default = Item.__table__.c.id.default.arg  # type: ignore[union-attr]
    default(None)  # bound to the parent's generator, on the parent's node
    out = tmp_path / "child"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            out.write_text(" ".join(str(default(None)) for _ in range(20_000)))
        finally:
            os._exit(0)
    parent = [default(None) for _ in range(20_000)]
    assert os.waitpid(pid, 0)[1] == 0
    child = [int(value) for value in out.read_text().split()]
    assert len(child) == 20_000
    assert not set(parent) & set(child)
    assert default(None) > parent[-1]  # the parent keeps its node
