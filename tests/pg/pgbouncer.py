"""A real PgBouncer (Debian's ``pgbouncer``) in front of the test server, on a loopback port.

``start(server, pool_mode, reset)`` writes a config into a private folder, starts the daemon
(as the ``postgres`` OS user when run as root: PgBouncer refuses root) and waits until it
accepts connections; ``stop()`` ends that one process. Trust authentication, every database
passed through, fewer server connections than clients so that clients share backends.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from databases import DbUrl

CONFIG = """\
[databases]
* = host={host} port={port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen}
unix_socket_dir =
auth_type = trust
auth_file = {folder}/userlist.txt
pool_mode = {pool_mode}
server_reset_query = {reset}
server_reset_query_always = 0
default_pool_size = {pool_size}
max_client_conn = 200
ignore_startup_parameters = extra_float_digits,options
logfile = {folder}/pgbouncer.log
pidfile = {folder}/pgbouncer.pid
"""


def binary() -> str | None:
    """The pgbouncer executable, if installed (``.ci/run`` installs it)."""
    return shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if Path(p).exists()), None
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class PgBouncer:
    """A running PgBouncer and the URL of the test database through it."""

    process: subprocess.Popen[bytes]
    folder: Path
    url: DbUrl

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def log(self) -> str:
        path = self.folder / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""


def start(server: DbUrl, pool_mode: str, reset: str, pool_size: int = 4) -> PgBouncer:
    executable = binary()
    if executable is None:
        raise RuntimeError("pgbouncer is not installed: apt-get install -y pgbouncer")
    folder = Path(tempfile.mkdtemp(prefix="idfields-pgbouncer-"))
    folder.chmod(0o755)
    listen = _free_port()
    (folder / "userlist.txt").write_text(f'"{server.user}" ""\n')
    config = folder / "pgbouncer.ini"
    config.write_text(
        CONFIG.format(
            host=server.host,
            port=server.port,
            listen=listen,
            folder=folder,
            pool_mode=pool_mode,
            reset=reset,
            pool_size=pool_size,
        )
    )
    command = [executable, str(config)]
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        command = [executable, "-u", "postgres", str(config)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    bouncer = PgBouncer(process, folder, dataclasses.replace(server, host="127.0.0.1", port=listen))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"pgbouncer exited: {output}")
        try:
            with socket.create_connection(("127.0.0.1", listen), timeout=0.2):
                return bouncer
        except OSError:
            time.sleep(0.05)
    bouncer.stop()
    raise RuntimeError("pgbouncer did not start listening within 10 s")
