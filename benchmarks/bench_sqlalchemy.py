"""SQLAlchemy inserts with ``id_column`` keys against the database's own auto-increment and every
app-side peer, on three paths, on PostgreSQL (psycopg 3) and MariaDB (PyMySQL and mysqlclient).

Paths, N rows each, into an emptied table:
- ORM flush: ``session.add_all(objects)`` + ``commit()`` (target <= 1.0x the auto-increment key);
- ``session.execute(insert(Model), rows)`` + ``commit()`` (insertmanyvalues; target <= 1.05x on
  PostgreSQL);
- Core executemany: ``conn.execute(table.insert(), rows)`` (target <= 1.05x on PostgreSQL).
- Both many-row paths again with the keys back, as an application that goes on to use the rows
  needs them (the ORM flush always takes them): the database's key by ``RETURNING``, ours with
  none, from ``inserted_primary_key_rows`` (Core) or given in the rows from one ``take(n)``
  (``insert(Model)``, whose result carries no keys); target <= 1.0x. Ours and the baseline only.

Keys: ``Identity()``/AUTO_INCREMENT BIGINT (the baseline), ``id_column`` (snowflake), and as
plain ``default=`` callables: ``uuid_utils.compat.uuid7`` (a ``Uuid`` column), snowflake-id,
tsidpy (defaults) and sonyflake-turbo. Every (driver, key) pair of a vendor runs in the same
paired rounds, so the MariaDB drivers are compared with each other too. "vs fastest peer" rows
hold ``id_column`` to the fastest app-side peer (target 1.0: ahead of every peer).

The ORM flush of an ``id_column`` model fills the keys itself at ``before_flush``
(``idfields.sqlalchemy_ext._flush``), so there is no separate prefill key: a listener setting them
through the instrumented attributes from one ``take(n)`` measured 250k client instructions per
row on PostgreSQL against the built-in fill's 232k (the Identity key: 259k).

Servers come from ``IDFIELDS_TEST_DATABASE_URL`` and ``IDFIELDS_TEST_MYSQL_URL`` (the test
defaults otherwise); tables are created and dropped here. ``python -m benchmarks.bench_sqlalchemy
[--quick]``.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from benchmarks.report import run_alone
from benchmarks.rows import Row, make_row
from benchmarks.servers import sqlalchemy_url
from benchmarks.timing import (
    Paired,
    lead_row,
    paired_rows,
    paired_wall_and_cpu,
    wall_and_cpu,
)
from idfields.nodes import StaticNode
from idfields.sqlalchemy_ext import configure, get_generator, id_column

OURS = "id_column (snowflake)"
BASELINE = {"postgresql": "Identity() BIGINT", "mysql": "AUTO_INCREMENT BIGINT"}
ORM, EXECUTE, CORE = "ORM flush", "session.execute(insert(Model), rows)", "Core executemany"
EXECUTE_BACK, CORE_BACK = f"{EXECUTE}, keys back", f"{CORE}, keys back"
# What the attempts to lead the peers by more than noise gave (client CPU, paired rounds).
LEAD_ATTEMPTS = (
    "the ID call is ~0.1 us of a 10-40 us row, the rest is SQLAlchemy and the driver, the same "
    "for every key. Attempts: the flush writing the keys into the pending objects' state "
    "(kept: 232k client instructions a row on PostgreSQL against 250k for a before_flush "
    "take(n) and 288k for the per-row default); a before_execute listener giving many-row "
    "INSERTs (insert(Model) rows, Core executemany) their keys before compiling: 1.01x and "
    "1.02x the per-row default's client CPU (not kept)"
)
# What an app-side key adds per row against the database's own key, beside the target rows.
KEY_COST = (
    "against the database's own key, a row carries one more parameter: SQLAlchemy runs the "
    "column default (its per-row default loop; the ID call itself ~0.1 us), psycopg binds and "
    "sends 8 more bytes, where the server's nextval() costs the other key ~0.1 us; with the "
    "keys filled outside the timer the same insert measured 1.02x-1.04x client CPU. "
    "Attempts: a before_execute listener filling the keys before compiling, "
    "1.02x the per-row default's client CPU (not kept). Floor, callgrind on the client "
    "(session.execute(insert(Model), 2,000 rows) + commit, psycopg 3, compiled core): 72.4k "
    "instructions a row for Identity, 80.4k for id_column (1.11x); the same Python calls per "
    "row for both (cProfile), so the 8k are SQLAlchemy's inline per-row default loop and one "
    "more bound parameter (by function: +2.2k in the interpreter, +1.5k dict lookups), not the "
    "ID call (TimeCore_call: 58 instructions a row, no frame)"
)
# Why the keys-back paths stay above 1.0x (PostgreSQL, psycopg 3, 2,000 rows, 11 paired rounds).
BACK_COST = (
    "RETURNING makes the database's key cheaper, not dearer: with it SQLAlchemy sends "
    "multi-row INSERT ... VALUES ... RETURNING statements (insertmanyvalues), without it "
    "psycopg 3's dialect hands the driver one single-row statement per row "
    "(use_insertmanyvalues_wo_returning is off): Identity 8.0 us client CPU a row with "
    "RETURNING, 12.3 without. Ours needs no RETURNING but is sent row by row: 12.6 (Core). "
    "With the batching forced on for both (the dialect attribute, an experiment): Identity "
    "7.5, ours 10.6-11.1 us, so the floor is the key's bound parameter in SQLAlchemy's per-row "
    "parameter handling (the ID call ~0.1 us), not the round trips"
)
TARGETS = {ORM: 1.0, EXECUTE_BACK: 1.0, CORE_BACK: 1.0}
# The many-row paths on PostgreSQL: an app-side key costs a row one more parameter (KEY_COST).
MANY_ROWS_TARGET = 1.05
DRIVERS = {"postgresql": ("psycopg",), "mysql": ("pymysql", "mysqldb")}
VENDORS = {"postgresql": "PostgreSQL", "mysql": "MariaDB"}
DRIVER_NAMES = {"psycopg": "psycopg 3", "pymysql": "PyMySQL", "mysqldb": "mysqlclient"}


class Base(DeclarativeBase):
    pass


def _uuid7() -> Callable[[], object]:
    from uuid_utils.compat import uuid7

    return uuid7


def _snowflake_id() -> Callable[[], object]:
    from snowflake import SnowflakeGenerator  # type: ignore[import-untyped]

    next_id: Callable[[], object] = SnowflakeGenerator(2).__next__
    return next_id


def _tsidpy() -> Callable[[], object]:
    from tsidpy import TSIDGenerator

    create = TSIDGenerator().create
    return lambda: create().number


def _sonyflake() -> Callable[[], object]:
    from sonyflake_turbo import SonyFlake

    next_id: Callable[[], object] = SonyFlake(*range(1024)).__next__
    return next_id


# name -> (table suffix, factory of the default, column type); None: not a peer default
PEERS: dict[str, tuple[str, Callable[[], Callable[[], object]], Any]] = {
    "uuid_utils uuid7 (Uuid)": ("uuid7", _uuid7, sa.Uuid),
    "snowflake-id": ("snowflake_id", _snowflake_id, sa.BigInteger),
    "tsidpy (defaults)": ("tsidpy", _tsidpy, sa.BigInteger),
    "sonyflake-turbo": ("sonyflake", _sonyflake, sa.BigInteger),
}


def _model(suffix: str, key: Any) -> type[Base]:
    """A mapped class ``idf_bench_sa_<suffix>`` with ``key`` as its id column."""
    namespace = {
        "__tablename__": f"idf_bench_sa_{suffix}",
        "id": key,
        "name": mapped_column(sa.String(40)),
        "amount": mapped_column(sa.Integer),
        "__annotations__": {"name": Mapped[str], "amount": Mapped[int]},
    }
    return type(f"Bench_{suffix}", (Base,), namespace)


@dataclass(frozen=True)
class Keys:
    """The model of every key kind that can run here, and why the others cannot."""

    models: dict[str, type[Base]]
    missing: dict[str, str]


def _keys() -> Keys:
    models: dict[str, type[Base]] = {
        "baseline": _model("auto", mapped_column(sa.BigInteger, sa.Identity(), primary_key=True)),
        OURS: _model("ksorted", id_column(primary_key=True)),
    }
    missing = {}
    for name, (suffix, factory, kind) in PEERS.items():
        try:
            default = factory()
        except ImportError as error:
            missing[name] = f"not installed: {error.name} (.venv/bin/pip install -e '.[bench]')"
            continue
        models[name] = _model(suffix, mapped_column(kind, primary_key=True, default=default))
    return Keys(models, missing)


def _table(model: type[Base]) -> sa.Table:
    table = model.__table__
    if not isinstance(table, sa.Table):
        raise TypeError(f"{model.__name__} is not mapped to a Table")
    return table


def _truncate(engine: sa.Engine, model: type[Base]) -> None:
    table = engine.dialect.identifier_preparer.format_table(_table(model))
    with engine.begin() as conn:
        conn.exec_driver_sql(f"TRUNCATE TABLE {table}")


def _insert(
    path: str, engine: sa.Engine, model: type[Base], rows: list[dict[str, Any]]
) -> tuple[float, float]:
    """Wall and client CPU seconds to insert ``rows`` into ``model``'s emptied table by ``path``."""
    _truncate(engine, model)
    if path in (EXECUTE_BACK, CORE_BACK):
        return _insert_keys_back(path, engine, model, rows)
    if path == CORE:
        table = _table(model)

        def core() -> None:
            with engine.begin() as conn:
                conn.execute(table.insert(), rows)

        return wall_and_cpu(core)
    with Session(engine) as session:
        objects = [] if path == EXECUTE else [model(**row) for row in rows]

        def orm() -> None:
            if path == EXECUTE:
                session.execute(sa.insert(model), rows)
            else:
                session.add_all(objects)
            session.commit()

        return wall_and_cpu(orm)


def _insert_keys_back(
    path: str, engine: sa.Engine, model: type[Base], rows: list[dict[str, Any]]
) -> tuple[float, float]:
    """:func:`_insert` ending with the keys in hand: RETURNING for the database's key, none
    for ours (see the module docstring)."""
    table = _table(model)
    ours = table.name == "idf_bench_sa_ksorted"
    if path == CORE_BACK:
        statement = table.insert() if ours else table.insert().returning(table.c.id)

        def core() -> None:
            with engine.begin() as conn:
                result = conn.execute(statement, rows)
                keys = result.inserted_primary_key_rows if ours else result.all()
                assert len(keys) == len(rows)

        return wall_and_cpu(core)
    generator = get_generator("snowflake")
    with Session(engine) as session:

        def orm() -> None:
            if ours:
                keys = generator.take(len(rows))
                given = [{**row, "id": key} for row, key in zip(rows, keys, strict=True)]
                session.execute(sa.insert(model), given)
            else:
                returned = session.execute(sa.insert(model).returning(table.c.id), rows).all()
                assert len(returned) == len(rows)
            session.commit()

        return wall_and_cpu(orm)


def _driver_url(vendor: str, driver: str) -> str:
    scheme, rest = sqlalchemy_url(vendor).split("://", 1)
    return f"{scheme.partition('+')[0]}+{driver}://{rest}"


def _engines(vendor: str) -> tuple[dict[str, sa.Engine], list[str]]:
    """An engine per installed driver of ``vendor``, and the names of the missing ones."""
    engines, missing = {}, []
    for driver in DRIVERS[vendor]:
        try:
            importlib.import_module("MySQLdb" if driver == "mysqldb" else driver)
        except ImportError:
            missing.append(driver)
            continue
        engines[driver] = sa.create_engine(_driver_url(vendor, driver))
    return engines, missing


def _path_rows(
    vendor: str, path: str, engines: dict[str, sa.Engine], keys: Keys, count: int, rounds: int
) -> list[Row]:
    rows = [{"name": f"row {i}", "amount": i} for i in range(count)]
    if path in (EXECUTE_BACK, CORE_BACK):  # ours against the database's key only
        keys = Keys({name: keys.models[name] for name in ("baseline", OURS)}, {})
    names = list(keys.models)
    subjects = [f"{driver}|{name}" for driver, name in itertools.product(engines, names)]

    def measure(subject: str) -> tuple[float, float]:
        driver, _, name = subject.partition("|")
        wall, cpu = _insert(path, engines[driver], keys.models[name], rows)
        return wall / count * 1e6, cpu / count * 1e6

    wall, cpu = paired_wall_and_cpu(subjects, rounds, measure)
    out: list[Row] = []
    baseline = BASELINE[vendor]
    many_rows = vendor == "postgresql" and path in (EXECUTE, CORE, EXECUTE_BACK, CORE_BACK)
    target = TARGETS.get(path, MANY_ROWS_TARGET if many_rows else None)
    for driver in engines:
        group = f"SQLAlchemy {path} ({VENDORS[vendor]}, {DRIVER_NAMES[driver]}, {count:,} rows)"
        label = {f"{driver}|{name}": baseline if name == "baseline" else name for name in names}
        for result, suffix, goal in ((wall, "", target), (cpu, ", client CPU", None)):
            mine = Paired({label[s]: result.values[s] for s in label}, result.load)
            cost = BACK_COST if path in (EXECUTE_BACK, CORE_BACK) else KEY_COST
            out += _key_rows(
                group + suffix, mine, baseline, goal, keys, cost if many_rows else None
            )
    if len(engines) > 1:  # MariaDB: each driver against the first, in the same rounds
        for result, suffix in ((wall, ""), (cpu, ", client CPU")):
            group = f"MariaDB driver, {path} ({count:,} rows){suffix}"
            for name in (OURS, "baseline"):
                shown = baseline if name == "baseline" else name
                versus = {f"{DRIVER_NAMES[d]}: {shown}": result.values[f"{d}|{name}"]
                          for d in engines}  # fmt: skip
                out += paired_rows(group, "us/row", Paired(versus, result.load), next(iter(versus)))
    return out


def _key_rows(
    group: str,
    mine: Paired[str],
    baseline: str,
    target: float | None,
    keys: Keys,
    cost: str | None,
) -> list[Row]:
    """One driver's rows of one path: every key against the baseline, the missing peers, and
    ours against the fastest peer."""
    targets = {OURS: target} if target else {}
    notes = {OURS: cost} if target and cost else {}
    rows = paired_rows(group, "us/row", mine, baseline, targets=targets, notes=notes)
    rows += [make_row(group, name, None, "us/row", baseline, note=why)
             for name, why in keys.missing.items()]  # fmt: skip
    lead = lead_row(group, OURS, list(PEERS), mine, "us/row")
    if lead is None:
        return rows
    lead["note"] = f"{lead['note']}; {LEAD_ATTEMPTS}"
    return [*rows, lead]


def _vendor_rows(vendor: str, count: int, rounds: int) -> list[Row]:
    engines, missing = _engines(vendor)
    rows: list[Row] = []
    try:
        keys = _keys()
        first = next(iter(engines.values()), None)  # the drivers share one database
        if first is not None:
            Base.metadata.drop_all(first)
            Base.metadata.create_all(first)
            for path in (ORM, EXECUTE, CORE, EXECUTE_BACK, CORE_BACK):
                rows += _path_rows(vendor, path, engines, keys, count, rounds)
            Base.metadata.drop_all(first)
    finally:
        Base.metadata.clear()
        Base.registry.dispose()
        for engine in engines.values():
            engine.dispose()
    for driver in missing:
        note = f"{DRIVER_NAMES[driver]} is not installed (.venv/bin/pip install -e '.[bench]')"
        group = f"SQLAlchemy ({VENDORS[vendor]})"
        rows.append(make_row(group, DRIVER_NAMES[driver], None, "us/row", None, note=note))
    return rows


def run(quick: bool = False) -> list[Row]:
    count, rounds = (300, 2) if quick else (5_000, 13)  # short rounds pair better under load
    configure(source=lambda layout: StaticNode(1))
    get_generator("snowflake")  # the node is taken outside the timed inserts
    try:
        rows: list[Row] = []
        for vendor in DRIVERS:
            try:
                rows += _vendor_rows(vendor, count, rounds)
            except sa.exc.OperationalError as error:  # one server gone keeps the other's rows
                note = f"server unavailable or lost: {error.orig!r}"
                rows.append(make_row(f"SQLAlchemy ({VENDORS[vendor]})", "every path", None,
                                     "us/row", None, note=note))  # fmt: skip
        return rows
    finally:
        configure()


if __name__ == "__main__":
    run_alone(run)
