"""A child whose pid is its parent's: a container's main process is PID 1, and a child it forks
into a new PID namespace (a sandbox: ``unshare(CLONE_NEWPID)``, bubblewrap, nsjail) is PID 1
as well. Pids repeat across namespaces, so they never tell a parent from its child: that child
must be refused its parent's fixed node like any other, and open its own coordination
connections. Each case runs ``pid_namespace_child.py`` as PID 1 of a new namespace."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import needs
import pytest

pytestmark = [pytest.mark.core, pytest.mark.slow]

CHILD = Path(__file__).with_name("pid_namespace_child.py")


def _as_pid_1(*args: str, pure: str = "") -> list[int]:
    """``pid_namespace_child.py args`` as PID 1 of a new PID namespace; the numbers it prints."""
    unshare = shutil.which("unshare")
    if unshare is None:  # pragma: no cover - util-linux missing
        needs.skip("unshare")
    probe = subprocess.run([unshare, "--pid", "--fork", "true"], capture_output=True, check=False)
    if probe.returncode != 0:  # pragma: no cover - no CAP_SYS_ADMIN here
        pytest.skip(f"cannot make a PID namespace: {probe.stderr.decode().strip()}")
    root = str(Path(__file__).parents[2])
    env = {"PYTHONPATH": root, "PATH": os.defpath, "IDFIELDS_PURE_PYTHON": pure}
    done = subprocess.run(
        [unshare, "--pid", "--fork", "--mount-proc", sys.executable, str(CHILD), *args],
        capture_output=True,
        check=True,
        cwd=root,
        env=env,
        timeout=300,
    )
    return [int(number) for number in done.stdout.split()]


@pytest.mark.parametrize("pure", ["", "1"], ids=["compiled core", "pure core"])
def test_a_child_that_is_pid_1_of_a_new_namespace_never_shares_its_parents_fixed_node(
    pure: str,
) -> None:
    issued, shared, refused = _as_pid_1("node", "611", pure=pure)
    assert shared == 0, f"{shared:,} of the child's {issued:,} IDs are the parent's"
    assert refused == 1, "the child was not refused the parent's node"


def test_a_child_that_is_pid_1_of_a_new_namespace_never_uses_its_parents_connections(
    postgres_url: str,
) -> None:
    """The SQLAlchemy coordination adapter's pool: a connection shared by two processes mixes
    their lease statements on one socket."""
    parent, child = _as_pid_1("pool", postgres_url)
    assert parent != child, f"the child ran on the parent's backend (pid {parent})"
