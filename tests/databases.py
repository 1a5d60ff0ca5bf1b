"""Where the test suite gets its PostgreSQL and MariaDB/MySQL servers from.

The ID fields are only worth trusting once they have round-tripped through real databases, so
the tests never mock one. Each backend is looked up along a chain, first hit wins:

1. a URL in the environment: ``IDFIELDS_TEST_DATABASE_URL`` or ``IDFIELDS_TEST_MYSQL_URL``;
2. a testcontainers container, when a Docker engine answers;
3. a throwaway server built from the binaries on ``PATH`` (``initdb``/``pg_ctl`` or
   ``mariadb-install-db``/``mariadbd``) in a temporary directory;
4. nothing, with a reason that says how to enable the tests.

Servers that the chain starts live as long as the ``ExitStack`` passed in. Tests never touch the
server's own databases: :func:`scratch_database` gives each session a uniquely named one.

Why not pytest-postgresql / pytest-mysql: their "noproc" fixtures would
replace only step 1, which is one ``os.environ`` lookup here (the URL is parsed by
:class:`DbUrl` anyway, for psycopg, PyMySQL, SQLAlchemy and Django alike); their process
fixtures run ``pg_ctl initdb``/``pg_ctl start`` (and ``mysqld``) as the current user, which
PostgreSQL refuses as root, and CI runs as root: step 3 hands the data directory to the
``postgres``/``mysql`` account instead. Neither starts a container (step 2), and their
per-test template databases fit neither the Django nor the SQLAlchemy suites, which share one
scratch database per session.
"""

from __future__ import annotations

import dataclasses
import os
import pwd
import secrets
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, LiteralString
from urllib.parse import quote, unquote, urlsplit

import psycopg
import pymysql  # type: ignore[import-untyped,unused-ignore]
from psycopg import sql

POSTGRES_ENV = "IDFIELDS_TEST_DATABASE_URL"
MYSQL_ENV = "IDFIELDS_TEST_MYSQL_URL"
POSTGRES_IMAGE = "postgres:15-alpine"
MARIADB_IMAGE = "mariadb:10.11"
SCRATCH_PREFIX = "idfields_test_"

_SCHEMES = {
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "postgresql+psycopg": "postgresql",
    "mysql": "mysql",
    "mariadb": "mysql",
    "mysql+pymysql": "mysql",
}
# Per canonical scheme: default port, user, database (the one that always exists on a server).
_DEFAULTS = {"postgresql": (5432, "postgres", "postgres"), "mysql": (3306, "root", "mysql")}
_DRIVERS = {"postgresql": "postgresql+psycopg", "mysql": "mysql+pymysql"}
_DJANGO_ENGINES = {
    "postgresql": "django.db.backends.postgresql",
    "mysql": "django.db.backends.mysql",
}


@dataclass(frozen=True)
class DbUrl:
    """A parsed server URL, so each client library gets the arguments it wants from one string."""

    scheme: str
    host: str
    port: int
    user: str
    password: str | None
    database: str

    @classmethod
    def parse(cls, url: str) -> DbUrl:
        """Parse ``postgresql://`` or ``mysql://`` URLs; missing parts get the server defaults."""
        parts = urlsplit(url)
        scheme = _SCHEMES.get(parts.scheme)
        if scheme is None:
            raise ValueError(f"unsupported database URL scheme {parts.scheme!r} in {url!r}")
        if parts.query:
            raise ValueError(f"query parameters are not supported in test URLs: {url!r}")
        port, user, database = _DEFAULTS[scheme]
        return cls(
            scheme=scheme,
            host=parts.hostname or "127.0.0.1",
            port=parts.port or port,
            user=unquote(parts.username) if parts.username else user,
            password=unquote(parts.password) if parts.password is not None else None,
            database=unquote(parts.path.lstrip("/")) or database,
        )

    def with_database(self, name: str) -> DbUrl:
        """The same server, another database."""
        return dataclasses.replace(self, database=name)

    def __str__(self) -> str:
        return self._render(self.scheme)

    def sqlalchemy_url(self) -> str:
        """The URL naming the driver SQLAlchemy should use: psycopg 3 or PyMySQL."""
        return self._render(_DRIVERS[self.scheme])

    def psycopg_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``psycopg.connect``."""
        self._expect("postgresql")
        kwargs: dict[str, Any] = {"host": self.host, "port": self.port, "user": self.user}
        if self.password is not None:
            kwargs["password"] = self.password
        return kwargs | {"dbname": self.database}

    def pymysql_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``pymysql.connect``; utf8mb4 so any text round-trips."""
        self._expect("mysql")
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password or "",
            "database": self.database,
            "charset": "utf8mb4",
        }

    def django_databases(self) -> dict[str, dict[str, Any]]:
        """A Django ``DATABASES`` setting with this URL as ``default``.

        Django's MySQL backend imports ``MySQLdb``: call ``pymysql.install_as_MySQLdb()`` first.
        """
        database: dict[str, Any] = {
            "ENGINE": _DJANGO_ENGINES[self.scheme],
            "NAME": self.database,
            "USER": self.user,
            "PASSWORD": self.password or "",
            "HOST": self.host,
            "PORT": str(self.port),
        }
        if self.scheme == "mysql":
            database["OPTIONS"] = {"charset": "utf8mb4"}
        return {"default": database}

    def _render(self, scheme: str) -> str:
        auth = quote(self.user, safe="")
        if self.password is not None:
            auth += ":" + quote(self.password, safe="")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{auth}@{host}:{self.port}/{quote(self.database, safe='')}"

    def _expect(self, scheme: str) -> None:
        if self.scheme != scheme:
            raise ValueError(f"{self} is not a {scheme} URL")


@dataclass(frozen=True)
class Resolution:
    """What the chain found: a server URL and where it came from, or why there is none."""

    url: str | None
    source: str = ""
    reason: str = ""


@dataclass(frozen=True)
class _Source:
    name: str
    missing: Callable[[], str | None]  # why this source can't be used here, or None
    start: Callable[[ExitStack], str]


def resolve_postgres(stack: ExitStack) -> Resolution:
    """Find or start a PostgreSQL server; anything started is stopped when ``stack`` closes."""
    hint = (
        f"No PostgreSQL server for the tests. Set {POSTGRES_ENV}=postgresql://USER@HOST:5432/DBNAME,"
        f" or start a Docker engine (testcontainers runs {POSTGRES_IMAGE}),"
        " or install the PostgreSQL server binaries so initdb and pg_ctl are on PATH."
    )
    sources = [
        _Source("testcontainers", _docker_missing, _postgres_container),
        _Source(
            "initdb",
            lambda: binaries_missing("initdb", "pg_ctl"),
            lambda stack: stack.enter_context(throwaway_postgres()),
        ),
    ]
    return _resolve(POSTGRES_ENV, sources, hint, stack)


def resolve_mysql(stack: ExitStack) -> Resolution:
    """Find or start a MariaDB/MySQL server; anything started is stopped when ``stack`` closes."""
    hint = (
        f"No MariaDB/MySQL server for the tests. Set {MYSQL_ENV}=mysql://root@HOST:3306/DBNAME,"
        f" or start a Docker engine (testcontainers runs {MARIADB_IMAGE}),"
        " or install the MariaDB server so mariadb-install-db and mariadbd are on PATH."
    )
    sources = [
        _Source("testcontainers", _docker_missing, _mariadb_container),
        _Source(
            "mariadbd",
            lambda: binaries_missing("mariadb-install-db", "mariadbd"),
            lambda stack: stack.enter_context(throwaway_mariadb()),
        ),
    ]
    return _resolve(MYSQL_ENV, sources, hint, stack)


def _resolve(env: str, sources: Sequence[_Source], hint: str, stack: ExitStack) -> Resolution:
    if url := os.environ.get(env):
        return Resolution(url, source=env)
    tried = []
    for source in sources:
        why = source.missing()
        if why is None:
            try:
                return Resolution(source.start(stack), source=source.name)
            except Exception as exc:  # a broken source must not hide the next one
                why = f"failed: {exc}"
        tried.append(f"{source.name}: {why}")
    return Resolution(None, reason=f"{hint} (Tried {'; '.join(tried)}.)")


def _docker_missing() -> str | None:
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return None if docker_available() else f"no Docker engine answered at {host}"


def binaries_missing(*names: str) -> str | None:
    absent = [name for name in names if shutil.which(name) is None]
    return f"{' and '.join(absent)} not on PATH" if absent else None


def docker_available(timeout: float = 0.5) -> bool:
    """Ping the Docker engine directly, so a machine without one costs milliseconds.

    testcontainers itself would retry for a long time before giving up.
    """
    address = urlsplit(os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"))
    target: str | tuple[str, int]
    if address.scheme == "unix":
        family, target = socket.AF_UNIX, address.path
    elif address.scheme in ("tcp", "http"):
        family, target = socket.AF_INET, (address.hostname or "localhost", address.port or 2375)
    else:
        return False
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(target)
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            reply = sock.recv(64)
    except OSError:
        return False
    return reply.startswith(b"HTTP/1.") and b" 200 " in reply


def _postgres_container(stack: ExitStack) -> str:
    # Imported here: testcontainers is slow to import and only needed when Docker answers.
    from testcontainers.community.postgres import PostgresContainer

    container = stack.enter_context(PostgresContainer(POSTGRES_IMAGE, driver=None))
    return container.get_connection_url()


def _mariadb_container(stack: ExitStack) -> str:
    from testcontainers.community.mysql import MySqlContainer

    # As root, so the tests may create and drop their scratch databases.
    container = MySqlContainer(MARIADB_IMAGE, username="root", password="test", dbname="test")
    return stack.enter_context(container).get_connection_url()


@contextmanager
def throwaway_postgres(settings: Mapping[str, str] | None = None) -> Iterator[str]:
    """Run a private PostgreSQL cluster (``initdb`` + ``pg_ctl``) in a temporary directory, with
    ``settings`` (such as ``wal_level=logical``).

    Yields the URL of its ``postgres`` database on 127.0.0.1; on exit the cluster is stopped and
    its directory deleted. Durability is switched off: the data dies with the cluster anyway.
    """
    with _service_dir("postgres", "idfields-pg-") as (tmp, as_owner):
        _initdb(tmp / "data", as_owner, tmp)
        with _running_postgres(tmp / "data", as_owner, tmp, settings) as url:
            yield url


@contextmanager
def throwaway_primary_and_standby(settings: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """A private primary and a hot standby streaming from it (``pg_basebackup -R``), each on a
    loopback port, both run with ``settings`` (a standby needs some of them, such as
    ``max_prepared_transactions``, at least as high as its primary's). Yields their URLs."""
    with _service_dir("postgres", "idfields-pg-pair-") as (tmp, as_owner):
        _initdb(tmp / "primary", as_owner, tmp)
        with _running_postgres(tmp / "primary", as_owner, tmp, settings) as primary:
            port = str(DbUrl.parse(primary).port)
            backup = [_server_binary("pg_basebackup"), "-h", "127.0.0.1", "-p", port]
            backup += ["-U", "postgres", "-D", str(tmp / "standby"), "-R", "-X", "stream"]
            _run([*backup, "-c", "fast", "--no-sync"], as_owner, tmp)
            with _running_postgres(tmp / "standby", as_owner, tmp, settings) as standby:
                yield primary, standby


def _initdb(data: Path, as_owner: dict[str, Any], tmp: Path) -> None:
    initdb = ["initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "--no-sync"]
    _run([*initdb, "--encoding=UTF8", "--no-locale"], as_owner, tmp)


@contextmanager
def _running_postgres(
    data: Path, as_owner: dict[str, Any], tmp: Path, settings: Mapping[str, str] | None = None
) -> Iterator[str]:
    """The cluster in ``data`` started on a free loopback port (sockets in ``tmp``), without
    durability; the URL of its ``postgres`` database; stopped at exit."""
    log = tmp / f"{data.name}.log"
    port = free_port()
    options = (
        f"-p {port} -k {shlex.quote(str(tmp))} -c listen_addresses=127.0.0.1"
        " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    )
    options += "".join(f" -c {name}={value}" for name, value in (settings or {}).items())
    pg_ctl = ["pg_ctl", "-D", str(data), "-w", "-t", "60"]
    _run([*pg_ctl, "-l", str(log), "-o", options, "start"], as_owner, tmp, log)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        _run([*pg_ctl, "-m", "immediate", "stop"], as_owner, tmp, log)


def extension_available(name: str) -> bool:
    """Whether the server binaries on ``PATH`` have extension ``name`` (its control file in
    the server's share directory, as ``pg_config --sharedir`` names it)."""
    try:
        done = subprocess.run(
            [_server_binary("pg_config"), "--sharedir"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return False
    return (Path(done.stdout.strip()) / "extension" / f"{name}.control").exists()


def server_settings() -> set[str]:
    """The names of the settings the server binary on ``PATH`` knows (a patched server may
    know more than upstream's)."""
    done = subprocess.run(
        [_server_binary("postgres"), "--describe-config"], capture_output=True, text=True
    )
    return {line.split("\t", 1)[0] for line in done.stdout.splitlines()}


def _server_binary(name: str) -> str:
    """``name`` beside the ``initdb`` on PATH (one server version), else as PATH finds it."""
    initdb = shutil.which("initdb")
    beside = Path(initdb).resolve().parent / name if initdb else None
    return str(beside) if beside is not None and beside.exists() else name


@contextmanager
def throwaway_mariadb() -> Iterator[str]:
    """Run a private MariaDB server (``mariadb-install-db`` + ``mariadbd``) in a temporary dir.

    Yields the URL of its ``mysql`` database as passwordless root on 127.0.0.1; on exit the
    server is shut down and its directory deleted.
    """
    with _service_dir("mysql", "idfields-mariadb-") as (tmp, as_owner):
        data, log = tmp / "data", tmp / "server.log"
        install = ["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--skip-test-db"]
        _run([*install, "--auth-root-authentication-method=normal"], as_owner, tmp)
        port = free_port()
        server = subprocess.Popen(
            [
                "mariadbd",
                "--no-defaults",
                f"--datadir={data}",
                f"--socket={tmp / 'mysqld.sock'}",
                f"--port={port}",
                "--bind-address=127.0.0.1",
                f"--log-error={log}",
                f"--pid-file={tmp / 'mysqld.pid'}",
                "--skip-name-resolve",
                "--skip-log-bin",
                "--innodb-flush-log-at-trx-commit=0",
            ],
            cwd=tmp,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            **as_owner,
        )
        try:
            url = DbUrl.parse(f"mysql://root@127.0.0.1:{port}/mysql")
            _wait_for_mysql(url, server, log)
            yield str(url)
        finally:
            _stop(server)


@contextmanager
def _service_dir(owner: str, prefix: str) -> Iterator[tuple[Path, dict[str, Any]]]:
    """A temporary directory, plus the ``subprocess`` arguments to run a server in it.

    Servers refuse to run as root, so as root the directory is handed to the ``owner`` account
    and the arguments switch to it (what ``runuser -u owner`` would do, without the shell).
    """
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        as_owner: dict[str, Any] = {}
        if os.geteuid() == 0:
            account = _account(owner)
            os.chown(tmp, account.pw_uid, account.pw_gid)
            as_owner = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
        yield tmp, as_owner
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _account(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        raise RuntimeError(f"running as root and there is no {name!r} account to run as") from None


def _run(command: list[str], as_owner: dict[str, Any], cwd: Path, log: Path | None = None) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False, **as_owner)
    if done.returncode != 0:
        detail = done.stderr or done.stdout
        if log is not None:
            detail += _tail(log)
        raise RuntimeError(f"{shlex.join(command)} exited {done.returncode}: {detail.strip()}")


def _wait_for_mysql(url: DbUrl, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            pymysql.connect(**url.pymysql_kwargs(), connect_timeout=1).close()
            return
        # pymysql.MySQLError, not pymysql.err.MySQLError: once Django imports MySQLdb.* (that is
        # pymysql after install_as_MySQLdb), pymysql.err names a second copy of the module.
        except (pymysql.MySQLError, OSError):  # refused or reset while it starts
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mariadbd did not come up: {_tail(log)}") from None
            time.sleep(0.1)


def _stop(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM is mariadbd's clean shutdown; kill only if it hangs."""
    server.terminate()
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def _tail(log: Path, lines: int = 20) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def free_port() -> int:
    """A TCP port that was free a moment ago; the server binds it right after."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def scratch_database(server_url: str) -> Iterator[str]:
    """Create a uniquely named database on the server, yield its URL, drop it afterwards.

    Parallel runs and leftovers of crashed runs then never see each other's tables.
    """
    server = DbUrl.parse(server_url)
    name = SCRATCH_PREFIX + secrets.token_hex(6)
    if server.scheme == "postgresql":
        _postgres_admin(server, "CREATE DATABASE {}", name)
    else:
        _mysql_admin(server, "CREATE DATABASE {} CHARACTER SET utf8mb4", name)
    try:
        yield str(server.with_database(name))
    finally:
        if server.scheme == "postgresql":
            # FORCE: a test that leaked a connection must not keep the database alive.
            _postgres_admin(server, "DROP DATABASE IF EXISTS {} WITH (FORCE)", name)
        else:
            _mysql_admin(server, "DROP DATABASE IF EXISTS {}", name)


def _postgres_admin(server: DbUrl, statement: LiteralString, name: str) -> None:
    with psycopg.connect(**server.psycopg_kwargs(), autocommit=True) as conn:
        conn.execute(sql.SQL(statement).format(sql.Identifier(name)))


def _mysql_admin(server: DbUrl, statement: str, name: str) -> None:
    with pymysql.connect(**server.pymysql_kwargs()) as conn, conn.cursor() as cursor:
        cursor.execute(statement.format(f"`{name}`"))
