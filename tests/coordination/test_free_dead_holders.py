"""``free_dead_holders``: the leases of a process proven dead are freed, fenced at their expiry;
a live holder's and a foreign one's stay (each backend)."""

from __future__ import annotations

import subprocess
import sys
import time

from dbapi_database import DbApiDatabase

from idfields.coordination import free_dead_holders, list_leases
from idfields.coordination._holders import this_process


def test_only_provably_dead_holders_are_freed_and_their_fence_kept(
    db: DbApiDatabase, unique: str
) -> None:
    dead = subprocess.run(  # a process of this host, gone (and reaped) once run() returns
        [
            sys.executable,
            "-c",
            "from idfields.coordination._holders import this_process as t;print(t())",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    now = time.time_ns() // 1_000_000
    expires = now + 60_000
    rows = {1: dead, 2: this_process(), 3: "elsewhere:1:x-y-z:1:feedfacefeedface"}
    for node, holder in rows.items():
        db.execute(
            "INSERT INTO idfields_node_lease (layout, node, holder, acquired_at_ms, "
            "expires_at_ms) VALUES (%s, %s, %s, %s, %s)",
            [f"dead_{unique}", node, holder, now, expires],
        )
    assert free_dead_holders(db) >= 1  # other tests' dead rows may be freed too
    leases = {lease.node: lease for lease in list_leases(db, f"dead_{unique}")}
    assert [node for node, lease in sorted(leases.items()) if lease.live] == [2, 3]
    assert leases[1].holder == ""
    assert int(leases[1].expires_at.timestamp() * 1000) == expires  # the next holder's fence
