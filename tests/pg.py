"""A throwaway PostgreSQL server for the tests, and a fresh database per test.

`server()` starts one server per test process on first use: ``initdb`` into a
temporary directory (as the ``postgres`` system user when running as root,
since initdb refuses root), then ``postgres`` listening on 127.0.0.1 on a free
port with its socket in that directory. It is stopped when the process exits
(and by the ``pg_server`` fixture of the tests that use it, at session end).
`fresh_dsn()` creates an empty database on it and returns its DSN.

Without PostgreSQL binaries (under /usr/lib/postgresql/*/bin, or the folder
named by ``PG_BINDIR``) or psycopg, the tests that need a server are skipped
with the reason, except under CI (``CI=true``), where that is an error:
``scripts/ensure_postgres.sh`` installs Debian's postgresql.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import glob
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

START_TIMEOUT = 60.0  # seconds for initdb plus the first accepted connection


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def unavailable(reason: str) -> None:
    """Skip the calling test, or fail it under CI, where PostgreSQL must be there."""
    if in_ci():
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def find_bindir() -> Path | None:
    """The PostgreSQL server binaries: $PG_BINDIR when set, else the newest /usr/lib/postgresql/<v>/bin."""
    named = os.environ.get("PG_BINDIR")

    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(p) for p in path.parent.name.split(".") if p.isdigit())

    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    for bindir in [Path(named)] if named else sorted(found, key=version, reverse=True):
        if (bindir / "initdb").is_file() and (bindir / "postgres").is_file():
            return bindir
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    # runs in the child after it switched user: a server whose test process was
    # killed stops too (PR_SET_PDEATHSIG = 1), instead of lingering. The signal
    # follows the thread that started the child, so only the main thread asks.
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGINT)


class PgServer:
    """One running server; `dsn(dbname)` connects to it as its superuser ``postgres``."""

    def __init__(self, bindir: Path, settings: dict[str, str] | None = None) -> None:
        self.bindir = bindir
        self.settings = dict(settings or {})  # more ``-c name=value`` (the benchmarks' pg_stat_statements)
        self.root = Path(tempfile.mkdtemp(prefix="nb-agents-pg-"))
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._names = itertools.count(1)
        self._lock = threading.Lock()
        self._user: str | None = None
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                self.remove()
                unavailable(
                    "running as root, initdb needs the 'postgres' system user, which is missing "
                    "(Debian's postgresql package creates it: run scripts/ensure_postgres.sh)"
                )
                raise
            self._user = "postgres"
            os.chown(self.root, owner.pw_uid, owner.pw_gid)

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            user=self._user,
            capture_output=True,
            text=True,
            check=False,
        )

    def start(self) -> None:
        import psycopg

        t0 = time.monotonic()
        data = self.root / "data"
        done = self._run(
            "initdb",
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        self.initdb_seconds = time.monotonic() - t0
        for attempt in range(3):
            t1 = time.monotonic()
            self.port = _free_port()
            log = open(self.root / "server.log", "ab")
            self.proc = subprocess.Popen(
                [
                    str(self.bindir / "postgres"),
                    "-D",
                    str(data),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    "-k",
                    str(self.root),
                    # a scratch cluster: durability is not under test, speed is welcome
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                    "-c",
                    "max_connections=300",
                    *(x for k, v in self.settings.items() for x in ("-c", f"{k}={v}")),
                ],  # fmt: skip
                user=self._user,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent
                if threading.current_thread() is threading.main_thread()
                else None,
            )
            log.close()
            deadline = time.monotonic() + START_TIMEOUT
            while self.proc.poll() is None and time.monotonic() < deadline:
                try:
                    psycopg.connect(self.dsn("postgres"), connect_timeout=2).close()
                except psycopg.OperationalError:
                    time.sleep(0.05)
                    continue
                self.start_seconds = time.monotonic() - t1
                return
            self.stop()
            if attempt == 2 or "could not bind" not in self.log():
                raise RuntimeError(f"postgres did not start on 127.0.0.1:{self.port}:\n{self.log()}")

    def log(self) -> str:
        path = self.root / "server.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def dsn(self, dbname: str) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname} connect_timeout=10"

    def create_database(self) -> str:
        """A new empty database; returns its DSN."""
        import psycopg

        with self._lock:
            name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # fast shutdown: disconnect clients, then exit
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


_server: PgServer | None = None
_server_lock = threading.Lock()


def server() -> PgServer:
    """The test process's server, started on first use (skips or fails without PostgreSQL)."""
    global _server
    with _server_lock:
        if _server is not None and _server.proc is not None:
            return _server
        try:
            import psycopg  # noqa: F401
        except ImportError:
            unavailable("psycopg is not installed (pip install -e '.[postgres]')")
        bindir = find_bindir()
        if bindir is None and os.environ.get("PG_BINDIR"):
            unavailable(f"PG_BINDIR={os.environ['PG_BINDIR']} holds no initdb and postgres")
        if bindir is None:
            unavailable(
                "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin "
                "(run scripts/ensure_postgres.sh, or set PG_BINDIR)"
            )
        assert bindir is not None
        srv = PgServer(bindir)
        try:
            srv.start()
        except BaseException:
            srv.remove()
            raise
        atexit.register(srv.remove)
        _server = srv
        return srv


def stop_server() -> None:
    """Stop and delete this process's server, if one was started."""
    global _server
    with _server_lock:
        srv, _server = _server, None
    if srv is not None:
        srv.remove()


def fresh_dsn() -> str:
    """The DSN of a new, empty database on this process's server."""
    return server().create_database()
