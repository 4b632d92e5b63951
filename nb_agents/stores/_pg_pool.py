"""The connections of `PostgresSessionStore`: a small pool of sync psycopg connections.

Each connection serves one transaction at a time, in whichever thread asks:
an explicit one (`transaction`), or one statement that commits on its own
(`run`, autocommit: no ``BEGIN``/``COMMIT`` round trips). ``BEGIN`` and
``COMMIT`` are sent unprepared (so ``pg_stat_statements`` sees each one). A
pooled connection that the server closed (a restart, an idle timeout) is
dropped and another taken: one that has anything to read while idle (the
server's goodbye, or the end of the stream) is not used, and one that fails
its ``BEGIN``, or a read, is replaced; a forked child starts an empty pool of its own,
and keeps the connections it inherited referenced and unused (closing one
would end the parent's session on the shared socket; the garbage collector
would not, but would warn). The idle connections are closed by `close`, or
when the pool is garbage-collected, or at interpreter exit: never left for
the garbage collector to find at some random moment. psycopg is imported by
`postgres.py` first, so this module never loads it for ``import nb_agents``.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import psycopg

from .._sync import reset_after_fork

__all__ = ["PgPool", "idle_and_open"]

T = TypeVar("T")

# Connections a forked child inherited: never used, closed or collected there.
_INHERITED: list[psycopg.Connection[Any]] = []


def _close_all(conns: list[psycopg.Connection[Any]], pid: int) -> None:
    if os.getpid() == pid:  # a fork's copy of the list belongs to the parent
        while conns:
            conns.pop().close()


class PgPool:
    """Pooled autocommit connections to one database.

    Args:
        dsn: The libpq connection string.
        size: Connections kept for reuse, and at most in use at once: a caller
            past that waits for one to be handed back (a connection a burst
            opens and closes again costs the server more than the wait). 0:
            none kept, no bound.
        init: Run on new connections until it succeeded once (per process):
            creates the schema.
        on_fork: Called when the pool finds itself in a forked child.

    Neither callable should hold the pool's owner: the pool would then live in
    a reference cycle, which only the cyclic garbage collector frees.
    """

    def __init__(
        self,
        dsn: str,
        size: int,
        init: Callable[[psycopg.Connection[Any]], None],
        on_fork: Callable[[], None],
    ) -> None:
        self._dsn = dsn
        self._size = size
        self._init = init
        self._on_fork = on_fork
        self._idle: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()
        self._returned = threading.Condition(self._lock)
        self._leased = 0  # connections handed out and not back yet
        self._pid = os.getpid()
        self._ready = False
        self._finalizer = weakref.finalize(self, _close_all, self._idle, self._pid)
        reset_after_fork(self, PgPool._forked)

    def _forked(self) -> None:
        """In a forked child no thread of the parent holds the lock (the pool's first use there
        drops the parent's connections: `_acquire`)."""
        self._lock = threading.Lock()
        self._returned = threading.Condition(self._lock)

    @property
    def ready(self) -> bool:
        """Whether `init` succeeded on a connection of this process (the schema is there)."""
        return self._ready

    @contextlib.contextmanager
    def transaction(self, begin: str) -> Iterator[psycopg.Connection[Any]]:
        """A connection in a transaction opened with `begin`, committed on success."""
        conn = self._begin(begin)
        try:
            try:
                yield conn
            except BaseException:
                with contextlib.suppress(psycopg.Error):  # a broken connection is closed on release
                    conn.execute("ROLLBACK", prepare=False)
                raise
            conn.execute("COMMIT", prepare=False)
        finally:
            self._release(conn)

    def run(self, fn: Callable[[psycopg.Connection[Any]], T], *, idempotent: bool) -> T:
        """``fn(conn)`` on a connection outside any transaction: each statement commits on its own.

        A pooled connection that fails is replaced and `fn` run again only when
        `idempotent` (a read): a write that failed may have committed.
        """
        while True:
            conn, pooled = self._acquire()
            try:
                out = fn(conn)
            except psycopg.OperationalError:
                conn.close()
                self._release(conn)
                if not (pooled and idempotent):
                    raise
                continue
            except BaseException:
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    with contextlib.suppress(psycopg.Error):
                        conn.execute("ROLLBACK", prepare=False)
                self._release(conn)
                raise
            self._release(conn)
            return out

    def close(self) -> None:
        """Close the idle connections (those in use are closed or pooled when released)."""
        with self._lock:
            idle = self._idle[:]
            self._idle.clear()
        for conn in idle:
            conn.close()

    def _begin(self, begin: str) -> psycopg.Connection[Any]:
        while True:
            conn, pooled = self._acquire()
            try:
                conn.execute(begin, prepare=False)
                return conn
            except psycopg.OperationalError:
                conn.close()
                self._release(conn)
                if not pooled:
                    raise
                # the server closed a pooled connection (a restart, an idle timeout): take another
            except BaseException:
                conn.close()
                self._release(conn)
                raise

    def _acquire(self) -> tuple[psycopg.Connection[Any], bool]:
        with self._lock:
            if self._pid != os.getpid():
                # a forked child must not use its parent's connections, nor close them
                _INHERITED.extend(self._idle)
                self._idle.clear()
                self._pid, self._ready = os.getpid(), False
                self._finalizer.detach()
                self._finalizer = weakref.finalize(self, _close_all, self._idle, self._pid)
                self._leased = 0
                self._on_fork()
            while self._size and not self._idle and self._leased >= self._size:
                self._returned.wait()
            self._leased += 1
            while self._idle:
                conn = self._idle.pop()
                if idle_and_open(conn):
                    return conn, True
                _discard(conn)
        try:
            return self._connect(), False
        except BaseException:
            self._hand_back()
            raise

    def _release(self, conn: psycopg.Connection[Any]) -> None:
        """The end of a lease: the connection is pooled again, or closed."""
        usable = not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        with self._lock:
            pooled = usable and len(self._idle) < self._size and self._pid == os.getpid()
            if pooled:
                self._idle.append(conn)
            self._leased = max(0, self._leased - 1)
            self._returned.notify()
        if not pooled:
            conn.close()

    def _hand_back(self) -> None:
        with self._lock:
            self._leased = max(0, self._leased - 1)
            self._returned.notify()

    def _connect(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(self._dsn, autocommit=True)
        try:
            if not self._ready:
                self._init(conn)
                self._ready = True
        except BaseException:
            conn.close()
            raise
        return conn


def idle_and_open(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether a pooled connection looks usable: open, and with nothing to read while idle
    (a server that closes a connection says so first, or the stream ends)."""
    if conn.closed or conn.pgconn.status != psycopg.pq.ConnStatus.OK:
        return False
    try:
        readable, _, _ = select.select([conn.pgconn.socket], [], [], 0)
    except (OSError, ValueError, psycopg.OperationalError):
        return False
    return not readable


def _discard(conn: psycopg.Connection[Any]) -> None:
    with contextlib.suppress(Exception):
        conn.close()
