"""SQLModel models on k-sorted keys: ``id_field()`` for the key, ``id_foreign_key()`` for the
columns that hold it (BIGINT, where SQLModel's ``int`` is INTEGER), ``Id`` for JSON strings."""

# No `from __future__ import annotations`: SQLModel reads the relationships' annotations.
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlmodel import Field, Relationship, Session, SQLModel, select

from idfields.pydantic import Id
from idfields.sqlalchemy_ext import check_metadata
from idfields.sqlalchemy_ext.sqlmodel import id_field, id_foreign_key


class SmTeam(SQLModel, table=True):
    __tablename__ = "sm_team"
    id: Id | None = id_field()
    name: str = Field(index=True)
    heroes: list["SmHero"] = Relationship(back_populates="team")


class SmHero(SQLModel, table=True):
    __tablename__ = "sm_hero"
    id: Id | None = id_field()
    name: str
    team_id: Id | None = id_foreign_key("sm_team.id", default=None, ondelete="CASCADE")
    team: SmTeam | None = Relationship(back_populates="heroes")


class SmHeroPublic(SQLModel):
    """A response model, as SQLModel's FastAPI tutorial builds them."""

    id: Id
    name: str
    team_id: Id | None = None


TABLES = [SmTeam.__table__, SmHero.__table__]  # type: ignore[attr-defined]


@pytest.fixture
def tables(engine: sa.Engine) -> Iterator[sa.Engine]:
    SQLModel.metadata.create_all(engine, tables=TABLES)
    yield engine
    SQLModel.metadata.drop_all(engine, tables=TABLES)


def test_keys_and_foreign_keys_hold_ksorted_ids(tables: sa.Engine) -> None:
    with Session(tables) as session:
        team = SmTeam(name="Preventers")
        hero = SmHero(name="Rusty-Man", team=team)
        session.add(hero)
        session.commit()
        hero_id, team_id = hero.id, team.id
        assert hero_id is not None and team_id is not None
        assert hero_id > 2**53 and team_id > 2**53 and hero.team_id == team_id
    columns = {c["name"]: c["type"] for c in sa.inspect(tables).get_columns("sm_hero")}
    assert isinstance(columns["team_id"], sa.BigInteger)
    assert isinstance(columns["id"], sa.BigInteger)
    with Session(tables) as session:
        found = session.exec(select(SmHero).where(SmHero.team_id == team_id)).one()
        assert found.id == hero_id and found.team is not None and found.team.name == "Preventers"
    assert check_metadata(SQLModel.metadata) == []


def test_json_carries_ids_as_strings(tables: sa.Engine) -> None:
    """A JavaScript client reads a 63-bit number wrong; the string it gets back validates."""
    with Session(tables) as session:
        hero = SmHero(name="Spider-Boy", team=SmTeam(name="Z-Force"))
        session.add(hero)
        session.commit()
        session.refresh(hero)
        sent = SmHeroPublic.model_validate(hero).model_dump_json()
        assert f'"id":"{hero.id}"' in sent and f'"team_id":"{hero.team_id}"' in sent
        assert f'"id":"{hero.id}"' in hero.model_dump_json()
        assert SmHeroPublic.model_validate_json(sent).id == hero.id
