"""A child whose pid is its parent's: a container's main process is PID 1, and a child it forks
into a new PID namespace (a sandbox: ``unshare(CLONE_NEWPID)``, bubblewrap, nsjail) is PID 1
as well. Pids repeat across namespaces, so they never tell a parent from its child: that child
must be refused its parent's fixed node like any other. Both cores, in a process of its own
(``pid_namespace_child.py``) run as PID 1 of a new namespace."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CHILD = Path(__file__).with_name("pid_namespace_child.py")


@pytest.mark.parametrize("pure", ["", "1"], ids=["compiled core", "pure core"])
def test_a_child_that_is_pid_1_of_a_new_namespace_never_shares_its_parents_fixed_node(
    pure: str,
) -> None:
    unshare = shutil.which("unshare")
    if unshare is None:  # pragma: no cover - util-linux missing
        pytest.skip("no unshare(1)")
    probe = subprocess.run([unshare, "--pid", "--fork", "true"], capture_output=True, check=False)
    if probe.returncode != 0:  # pragma: no cover - no CAP_SYS_ADMIN here
        pytest.skip(f"cannot make a PID namespace: {probe.stderr.decode().strip()}")
    root = str(Path(__file__).parents[2])
    env = {"PYTHONPATH": root, "PATH": os.defpath, "IDFIELDS_PURE_PYTHON": pure}
    done = subprocess.run(
        [unshare, "--pid", "--fork", "--mount-proc", sys.executable, str(CHILD), "611"],
        capture_output=True,
        check=True,
        cwd=root,
        env=env,
        timeout=300,
    )
    issued, shared, refused = map(int, done.stdout.split())
    assert shared == 0, f"{shared:,} of the child's {issued:,} IDs are the parent's"
    assert refused == 1, "the child was not refused the parent's node"
