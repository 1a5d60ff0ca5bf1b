"""The database lease model of ``test_db_lease_model.py`` with what its rules leave out: resets
inside an open transaction (``DISCARD TEMP``, ``RESET ALL``, ``DISCARD SEQUENCES``: any role
may run them there), savepoints rolled back after their IDs were read,
``pg_advisory_unlock_all()`` and a clock that steps back (5 ms to 1.5 s). The repeats of
``test_restored_sequence.py`` and of the clock-step case of ``test_rollback_fence.py`` need the
restored position to reach the ticks just past a rolled-back re-take's limit (about 250 ticks
ahead), which this model's clock steps (1 ms to 4 s) and 25 steps rarely land on: those stay
examples of their own.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import rule

from tests.pg.lease.test_db_lease_model import BACKENDS, DatabaseLeases, World
from tests.pg.lease.test_db_lease_model import world as world

# What a call inside a transaction may answer after a reset there: the documented "could not
# open relation with OID" (XX000) of a dropped sequence, currval() undefined (55000).
REFUSED_AFTER_RESET = ("XX000", "55000")
# A backend that let go of its locks may meet a row another backend's open transaction wrote;
# the model runs one step at a time, so a wait is cut short (55P03) instead of hanging.
LOCK_TIMEOUT = "-c lock_timeout=1s"


class HostileLeases(DatabaseLeases):
    def _backend(self) -> psycopg.Connection[Any]:
        return self.world.connect(prepare_threshold=None, options=LOCK_TIMEOUT)

    @rule(count=st.sampled_from([1, 100]))
    def app_process_issues(self, count: int) -> None:
        """The model's app process, only while no backend holds a transaction open: its claim
        would wait for that transaction's row lock, and the model runs one step at a time."""
        if not any(self.in_transaction):
            super().app_process_issues(count)

    @rule(
        index=st.integers(0, BACKENDS - 1),
        reset=st.sampled_from(["DISCARD TEMP", "RESET ALL", "DISCARD SEQUENCES"]),
    )
    def resets_inside_a_transaction(self, index: int, reset: str) -> None:
        if not self.in_transaction[index]:
            self.backends[index].execute("BEGIN")
            self.in_transaction[index] = True
        self.backends[index].execute(reset)

    @rule(index=st.integers(0, BACKENDS - 1), count=st.sampled_from([1, 100]))
    def issues_in_a_savepoint_rolled_back(self, index: int, count: int) -> None:
        conn = self.backends[index]
        if not self.in_transaction[index]:
            conn.execute("BEGIN")
            self.in_transaction[index] = True
        conn.execute("SAVEPOINT s")
        try:
            rows = conn.execute(self.next_at, [self.tick, count]).fetchall()
        except psycopg.Error as error:
            assert error.sqlstate in ("53400", "22008", "55P03", *REFUSED_AFTER_RESET), error
            self.ends(index, commit=False)
            return
        self.issued += [int(row[0]) for row in rows]
        conn.execute("ROLLBACK TO SAVEPOINT s")

    @rule(index=st.integers(0, BACKENDS - 1))
    def lets_go_of_its_locks(self, index: int) -> None:
        self.backends[index].execute("SELECT pg_advisory_unlock_all()")

    @rule(ms=st.sampled_from([5, 300, 1500]))
    def clock_steps_back(self, ms: int) -> None:
        self.tick -= ms

    def issue(self, index: int, count: int, in_transaction: bool) -> None:
        """The model's issue, with the answers a reset inside the transaction may give."""
        try:
            super().issue(index, count, in_transaction)
        except AssertionError as error:
            if not any(
                text in str(error)
                for text in ("could not open relation", "currval", "lock timeout")
            ):
                raise
            self.ends(index, commit=False)


HostileLeases.issue = rule(  # type: ignore[method-assign]
    index=st.integers(0, BACKENDS - 1),
    count=st.sampled_from([1, 100, 5000]),
    in_transaction=st.booleans(),
)(HostileLeases.issue)


@pytest.mark.slow
def test_no_id_is_handed_out_twice_whatever_resets_savepoints_and_clock_steps(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(HostileLeases, "world", world, raising=False)
    machine = settings(max_examples=60, stateful_step_count=25, deadline=None, derandomize=True)(
        HostileLeases
    )
    machine.TestCase().runTest()
