"""The database side of the lease protocol, checked as a model: hypothesis drives real
PostgreSQL backends that issue IDs of a one-node layout in transactions, commit or roll back,
are reset the way poolers reset them (DISCARD ALL, DISCARD TEMP, RESET ALL) or drop their
position inside a transaction (DISCARD TEMP, then a rollback gives it back), switch roles, move
their position ahead of the clock or off the node (setval(), which any role may), are
terminated, and share the node with app processes that claim, issue and release it; the clock
moves in steps (the test hook's tick). After every step no ID was handed out twice, counting the
IDs a rolled-back transaction handed out: the client read them and may keep them, and every ID
a backend issued is on the claimed node, inside its session's window (invariants D1-D9 of
docs/explanation/lease-protocol-database.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import psycopg
import pytest
from dbapi_database import DbApiDatabase
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from psycopg import sql

from idfields import ClockMovedBackwards, NodeError, make_generator
from idfields.coordination import LeaseSource
from idfields.layouts import SNOWFLAKE_EPOCH, Layout
from idfields.sql.fences import fence_sequence
from tests.pg.conftest import Connect, terminate

EPOCH_MS = int(SNOWFLAKE_EPOCH.timestamp() * 1000)
# What a backend may answer instead of IDs: no free node (another holder has it, or its fence
# is further ahead than the window), the clock behind its last ID (it ran ahead).
REFUSED = ("53400", "22008")
BACKENDS = 2


@dataclass
class World:
    """What the machine runs against, set by the test: a connection factory, the layout, the
    database URL, and a role with the documented grants."""

    connect: Connect
    layout: Layout
    url: str
    role: str


class DatabaseLeases(RuleBasedStateMachine):
    world: ClassVar[World]

    def __init__(self) -> None:
        super().__init__()
        self.admin = self.world.connect()
        self.tick = self._clock_tick()
        self.backends = [self._backend() for _ in range(BACKENDS)]
        self.in_transaction = [False] * BACKENDS
        self.issued: list[int] = []
        name = self.world.layout.name
        hook = sql.Identifier(f"next_{name}_at")
        self.next_at = sql.SQL("SELECT idfields.{}(%s) FROM generate_series(1, %s)").format(hook)
        self.position = f"pg_temp.idfields_{name}"
        self.window = sql.SQL("SELECT last_value FROM pg_temp.{}").format(
            sql.Identifier(f"idfields:{name}")
        )

    def _clock_tick(self) -> int:
        row = self.admin.execute("SELECT idfields.clock_ms() - %s", [EPOCH_MS]).fetchone()
        assert row is not None
        return int(row[0])

    def _backend(self) -> psycopg.Connection[Any]:
        return self.world.connect(prepare_threshold=None)

    @rule(ms=st.sampled_from([1, 50, 300, 1000, 2100, 4000]))
    def time_passes(self, ms: int) -> None:
        self.tick += ms

    @rule(
        index=st.integers(0, BACKENDS - 1),
        count=st.sampled_from([1, 100, 5000]),
        in_transaction=st.booleans(),
    )
    def issue(self, index: int, count: int, in_transaction: bool) -> None:
        """``count`` IDs at the clock's tick (5,000: more than a tick holds, so it runs ahead),
        in the backend's open transaction, in a new one, or each statement on its own."""
        if in_transaction and not self.in_transaction[index]:
            self.backends[index].execute("BEGIN")
            self.in_transaction[index] = True
        try:
            rows = self.backends[index].execute(self.next_at, [self.tick, count]).fetchall()
        except psycopg.Error as error:
            assert error.sqlstate in REFUSED, error
            if self.in_transaction[index]:  # the transaction is aborted: end it
                self.ends(index, commit=False)
            return
        ids = [int(row[0]) for row in rows]
        window = self.backends[index].execute(self.window).fetchone()
        assert window is not None
        _, node, _ = self.world.layout.placed
        assert {i // node.multiplier % node.radix for i in ids} == {0}, "an ID off the node"
        assert max(ids) <= window[0], f"{max(ids) - window[0]} past the session's window"
        self.issued += ids

    @rule(
        index=st.integers(0, BACKENDS - 1),
        ms=st.sampled_from([300, 3000]),
        node=st.sampled_from([0, 1]),
    )
    def moves_its_position(self, index: int, ms: int, node: int) -> None:
        """The backend's role moves its session's position ``ms`` ahead of the clock, on the
        claimed node 0 or on node 1 (which no lease covers), where it may write it: the owner
        (a superuser) may, a role that may not write the id column may not (issue 39, items 6
        and 7; D9). The checks in ``issue`` say where its IDs land."""
        stamp, node_field, _ = self.world.layout.placed
        value = (self.tick + ms) * stamp.multiplier + node * node_field.multiplier
        self.backends[index].execute(
            "SELECT setval(p, %s) FROM to_regclass(%s) AS p "
            "WHERE p IS NOT NULL AND has_sequence_privilege(p, 'UPDATE')",
            [value, self.position],
        )

    @rule(index=st.integers(0, BACKENDS - 1), commit=st.booleans())
    def ends(self, index: int, commit: bool) -> None:
        """The transaction commits or rolls back; the IDs it handed out were read either way."""
        if self.in_transaction[index]:
            self.backends[index].execute("COMMIT" if commit else "ROLLBACK")
            self.in_transaction[index] = False

    @rule(
        index=st.integers(0, BACKENDS - 1),
        reset=st.sampled_from(["DISCARD ALL", "DISCARD TEMP", "RESET ALL"]),
    )
    def pooler_resets(self, index: int, reset: str) -> None:
        if not self.in_transaction[index]:
            self.backends[index].execute(reset)

    @rule(
        index=st.integers(0, BACKENDS - 1),
        count=st.sampled_from([1, 5000]),
        ms=st.sampled_from([0, 300, 1000]),
    )
    def drops_its_position_in_a_rolled_back_transaction(
        self, index: int, count: int, ms: int
    ) -> None:
        """A transaction that begins with DISCARD TEMP, issues, lets the clock move, issues
        again and rolls back: the rollback gives back the sequence it dropped, with the claim
        made before it, behind the IDs read in between."""
        if self.in_transaction[index]:
            return
        self.backends[index].execute("BEGIN")
        self.backends[index].execute("DISCARD TEMP")
        self.in_transaction[index] = True
        self.issue(index, count, in_transaction=True)
        self.tick += ms
        self.issue(index, count, in_transaction=True)
        self.ends(index, commit=False)

    @rule(index=st.integers(0, BACKENDS - 1))
    def switches_role(self, index: int) -> None:
        """SET ROLE to a role that cannot read its backend's start time (RESET ALL undoes it)."""
        if not self.in_transaction[index]:
            role = sql.Identifier(self.world.role)
            self.backends[index].execute(sql.SQL("SET ROLE {}").format(role))

    @rule(index=st.integers(0, BACKENDS - 1))
    def terminated(self, index: int) -> None:
        """The backend ends (pg_terminate_backend, a crash of its client): a new one replaces
        it; whatever it handed out stays handed out."""
        terminate(self.admin, self.backends[index].info.backend_pid)
        self.backends[index].close()
        self.backends[index] = self._backend()
        self.in_transaction[index] = False

    @rule(count=st.sampled_from([1, 100]))
    def app_process_issues(self, count: int) -> None:
        """An app process on the model clock claims the node (when it may), issues and exits
        cleanly (releasing the node behind what it issued)."""
        clock: Callable[[], int] = lambda: (EPOCH_MS + self.tick) * 1_000_000  # noqa: E731
        database = DbApiDatabase("postgresql", self.world.url)
        try:
            generator = make_generator(
                self.world.layout, LeaseSource(database, clock=clock), clock=clock
            )
            try:
                self.issued += [generator() for _ in range(count)]
            finally:
                generator.close()
        except NodeError:
            pass  # the node is a live holder's, or fenced further ahead than a generator runs
        except ClockMovedBackwards:
            pass  # claimed behind a fence ahead of the model clock, which stands while it waits
        finally:
            database.close()

    @invariant()
    def no_id_is_handed_out_twice(self) -> None:
        assert len(self.issued) == len(set(self.issued)), (
            f"{len(self.issued) - len(set(self.issued))} IDs handed out twice"
        )

    def teardown(self) -> None:
        for conn in self.backends:
            conn.close()
        self.admin.execute(
            "DELETE FROM idfields_node_lease WHERE layout = %s", [self.world.layout.lease_key]
        )
        # the next example starts from an empty node, its fence included
        fence = f"idfields.{fence_sequence(self.world.layout.lease_key, 0)}"
        self.admin.execute(
            "SELECT setval(f, 0) FROM to_regclass(%s) AS f WHERE f IS NOT NULL", [fence]
        )
        self.admin.close()


@pytest.fixture
def world(connect: Connect, postgres_url: str, one_node: Layout, app_role: str) -> Iterator[World]:
    """The layout's test hook and what it calls are granted to the role (as
    docs/how-to/privileges.md says), so a backend issues under it as well."""
    connect().execute(
        sql.SQL(
            "GRANT EXECUTE ON FUNCTION idfields.{}(bigint),"
            " idfields.{}(regclass, regclass, bigint), idfields.{}(bigint, regclass) TO {}"
        ).format(
            sql.Identifier(f"next_{one_node.name}_at"),
            sql.Identifier(f"next_{one_node.name}_at_on"),
            sql.Identifier(f"issue_{one_node.name}_at"),
            sql.Identifier(app_role),
        )
    )
    yield World(connect, one_node, postgres_url, app_role)


@pytest.mark.slow
def test_no_id_is_handed_out_twice_by_backends_and_app_processes(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DatabaseLeases, "world", world, raising=False)
    machine = settings(max_examples=150, stateful_step_count=25, deadline=None, derandomize=True)(
        DatabaseLeases
    )
    machine.TestCase().runTest()
