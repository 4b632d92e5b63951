"""The one-statement writes of `PostgresSessionStore` on the caller's event loop: no worker thread.

A call of `._pg_fast` (a one-statement write, or a read) is a generator: it
yields each statement as ``(sql, params)`` and is sent the statement's rows back
(``fetchall``), so the same code runs on a sync connection in a worker thread
(`drive`) or on a `psycopg.AsyncConnection` on the caller's loop
(`LoopConnections.run`).

Why the loop: a statement handed to a worker thread takes the GIL back and
forth with the busy loop around every libpq call. Under S5's load the threads
took 1.4 ms of CPU an approval cycle for its three statements (and their
encoding), with 60 context switches; on the loop a statement's socket is one
more thing the selector waits for, and the cycle costs a third less CPU
(`benchmarks/threads_cpu.py`, `benchmarks/README.md`). A read waited in the
threads' queue behind those writes; it runs here too.

Each loop gets connections of its own (an `AsyncConnection` belongs to the
loop that opened it), at most `size` in use at once; a caller past that waits
on the loop. A statement runs in a task of its own, which the caller awaits
shielded: a caller cancelled while its statement runs gets `CancelledError`
at once, and the statement runs to its end (begun is begun: a write is never
cut in half), as in the worker threads. A loop that shuts down with a
statement in flight (``asyncio.run`` cancels the tasks it leaves) has psycopg
cancel it in the server, as a process that exits would. A loop's connections
close with it: code that runs each call in an ``asyncio.run`` of its own
connects each time (the ``_sync`` twins keep one loop). The idle connections
are closed by `close`, or when the loop's connections are garbage-collected
(the loop is gone), never left for the garbage collector to warn about; a
forked child starts with none, and leaves its parent's alone (closing one
would end the parent's session on the shared socket).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import weakref
from collections.abc import Callable, Generator
from typing import Any, TypeVar

import psycopg

from .._sync import reset_after_fork
from ._pg_pool import idle_and_open

__all__ = ["LoopConnections", "Statements", "drive"]

T = TypeVar("T")
Statements = Generator[tuple[str, Any], list[Any], T]
"""A call: yields ``(sql, params)``, is sent the statement's rows, returns its result."""

# Connections a forked child inherited: never used, closed or collected there.
_INHERITED: list[Any] = []


def drive(statements: Statements[T], conn: psycopg.Connection[Any]) -> T:
    """Run `statements` on a sync connection (in a worker thread): what it returns."""
    try:
        sql, params = next(statements)
        while True:
            sql, params = statements.send(conn.execute(sql, params).fetchall())
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def _drive(statements: Statements[T], conn: psycopg.AsyncConnection[Any]) -> T:
    try:
        sql, params = next(statements)
        while True:
            cur = await conn.execute(sql, params)
            sql, params = statements.send(await cur.fetchall())
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


def _finish(conns: list[psycopg.AsyncConnection[Any]], pid: int) -> None:
    """Close `conns` without their loop (libpq's ``PQfinish``, as ``close()`` does)."""
    if os.getpid() == pid:  # a fork's copy of the list belongs to the parent
        while conns:
            conn = conns.pop()  # held while it closes: else collected (and warned about) first
            conn.pgconn.finish()


class _OnLoop:
    """One loop's connections."""

    def __init__(self, dsn: str, size: int) -> None:
        self.dsn = dsn
        self.idle: list[psycopg.AsyncConnection[Any]] = []
        self.free = asyncio.Semaphore(size) if size else None
        self.size = size
        self.pid = os.getpid()
        self.finalizer = weakref.finalize(self, _finish, self.idle, self.pid)

    async def run(self, make: Callable[[], Statements[T]], idempotent: bool) -> T:
        if self.free is not None:
            await self.free.acquire()
        try:
            while True:
                conn, pooled = await self._take()
                try:
                    out = await _drive(make(), conn)
                except psycopg.OperationalError:
                    conn.pgconn.finish()
                    if not (pooled and idempotent):
                        raise  # a write that failed may have committed
                    continue  # a pooled connection the server closed: a read runs again
                except BaseException:
                    self._give_back(conn)
                    raise
                self._give_back(conn)
                return out
        finally:
            if self.free is not None:
                self.free.release()

    async def _take(self) -> tuple[psycopg.AsyncConnection[Any], bool]:
        while self.idle:
            conn = self.idle.pop()
            if idle_and_open(conn):  # not one the server closed meanwhile (a restart, an idle timeout)
                return conn, True
            conn.pgconn.finish()
        return await psycopg.AsyncConnection.connect(self.dsn, autocommit=True), False

    def _give_back(self, conn: psycopg.AsyncConnection[Any]) -> None:
        idle = not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        if idle and len(self.idle) < self.size:  # size 0: none kept
            self.idle.append(conn)
        else:
            conn.pgconn.finish()


class LoopConnections:
    """A store's connections on event loops, `size` per loop at most in use (0: no bound)."""

    def __init__(self, dsn: str, size: int) -> None:
        self._dsn = dsn
        self._size = size
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _OnLoop] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        reset_after_fork(self, LoopConnections._forked)

    def _forked(self) -> None:
        """In a forked child: none of the parent's connections (they stay open, unused, for it)."""
        self._lock = threading.Lock()
        for on in list(self._loops.values()):
            on.finalizer.detach()
            _INHERITED.extend(on.idle)
        self._loops = weakref.WeakKeyDictionary()

    @staticmethod
    def usable(loop: asyncio.AbstractEventLoop) -> bool:
        """Whether psycopg can wait on `loop` (not Windows' proactor loop)."""
        return sys.platform != "win32" or isinstance(loop, asyncio.SelectorEventLoop)

    async def run(self, make: Callable[[], Statements[T]], *, idempotent: bool) -> T:
        """``make()``'s statements on a connection of the running loop, shielded from the caller's
        cancellation; `idempotent`: run again on another connection if a pooled one failed."""
        loop = asyncio.get_running_loop()
        on = self._loops.get(loop)
        if on is None:
            with self._lock:
                on = self._loops[loop] = _OnLoop(self._dsn, self._size)
        task = loop.create_task(on.run(make, idempotent))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(_seen)  # it runs to its end; what it raises is nobody's now
            raise

    def close(self) -> None:
        """Close the idle connections of every loop (those in use are closed when handed back)."""
        with self._lock:
            ons = list(self._loops.values())
        for on in ons:
            _finish(on.idle, on.pid)


def _seen(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()
