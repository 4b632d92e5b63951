"""The connections of `PostgresSessionStore`: a small pool of sync psycopg connections.

Each connection serves one transaction at a time, in whichever thread asks.
A pooled connection that the server closed (a restart, an idle timeout) is
dropped and another taken; a forked child starts an empty pool of its own,
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
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import psycopg

__all__ = ["PgPool"]

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
        size: Idle connections kept for reuse.
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
        self._pid = os.getpid()
        self._ready = False
        self._finalizer = weakref.finalize(self, _close_all, self._idle, self._pid)

    @contextlib.contextmanager
    def transaction(self, begin: str) -> Iterator[psycopg.Connection[Any]]:
        """A connection in a transaction opened with `begin`, committed on success."""
        conn = self._begin(begin)
        try:
            try:
                yield conn
            except BaseException:
                with contextlib.suppress(psycopg.Error):  # a broken connection is closed on release
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            self._release(conn)

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
                conn.execute(begin)
                return conn
            except psycopg.OperationalError:
                conn.close()
                if not pooled:
                    raise
                # the server closed a pooled connection (a restart, an idle timeout): take another
            except BaseException:
                conn.close()
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
                self._on_fork()
            if self._idle:
                return self._idle.pop(), True
        return self._connect(), False

    def _release(self, conn: psycopg.Connection[Any]) -> None:
        if not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            with self._lock:
                if len(self._idle) < self._size and self._pid == os.getpid():
                    self._idle.append(conn)
                    return
        conn.close()

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
