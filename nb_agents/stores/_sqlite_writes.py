"""Where `SqliteSessionStore`'s writes wait: one writer per file in this process, and
group commit in worker threads.

One write at a time per database file in this process (`FileWrites`):
writers queue on its lock, woken at once when it frees, instead of in
SQLite's busy handler, which sleeps in growing steps and turns a short wait
into a long tail under load. A write on an event loop never blocks on it: it
waits on its loop (`FileWrites.released`) and then runs there.

A write that cannot run on its loop (``synchronous="FULL"``, whose commits
fsync; the database held by another process; the store's first use) runs in
a worker thread, batched (`FileWrites.batched`): the writes that arrive while
one batch commits go together in the next, one transaction of ``BEGIN
IMMEDIATE``, a savepoint per write (a write that raises, or finds that its
known-row path does not hold, is rolled back alone), and one ``COMMIT`` (one
fsync for all). Each caller learns its outcome once the batch committed, and
what its write taught its store (`._sqlite_fast.Fast.hold`) is kept only then.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import anyio.to_thread

from ._sqlite_fast import SLOW, Fast

__all__ = ["FileWrites", "file_writes"]

T = TypeVar("T")

_FILES: dict[str, FileWrites] = {}
_FILES_GUARD = threading.Lock()

# A write waiting for its batch: its loop and future, its body and arguments, its store's `Fast`.
_Write = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...], Fast]


class FileWrites:
    """The writes of one database file in this process: one at a time, batched in threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # the lock's own methods, no call in between: ``acquire(blocking=True)``, and
        # ``unlock()``, which `release` follows with `wake` when a loop waits
        self.acquire = self._lock.acquire
        self.unlock = self._lock.release
        self._guard = threading.Lock()
        self.waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._queue: list[_Write] = []

    def release(self) -> None:
        self.unlock()
        if self.waiters:  # a waiter added meanwhile sees the lock free (see `released`)
            self.wake()

    def wake(self) -> None:
        """Wake the loops that wait for the lock (`released`)."""
        with self._guard:
            waiters, self.waiters = self.waiters, []
        for loop, fut in waiters:
            with contextlib.suppress(RuntimeError):  # its loop was closed
                loop.call_soon_threadsafe(_settle, fut, None, None)

    async def released(self) -> None:
        """Until the lock is (or was, since this call) released."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._guard:
            self.waiters.append((loop, fut))
        if self._lock.locked():
            await fut

    # -- group commit -----------------------------------------------------------------
    async def batched(
        self,
        body: Callable[..., T],
        args: tuple[Any, ...],
        fast: Fast,
        connection: Callable[[], AbstractContextManager[sqlite3.Connection]],
    ) -> T:
        """``body(conn, *args)`` in the next batch (on a connection from `connection`, in a
        worker thread); what it returned, once the batch committed."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        with self._guard:
            self._queue.append((loop, fut, body, args, fast))
        # a thread per write waits for the lock; the first to get it commits every write queued
        await anyio.to_thread.run_sync(self._drain, fut, connection)
        return await fut

    def _drain(
        self, fut: asyncio.Future[Any], connection: Callable[[], AbstractContextManager[sqlite3.Connection]]
    ) -> None:
        self.acquire()
        try:
            with self._guard:
                batch, self._queue = self._queue, []
            if batch:  # else another thread committed this write in its batch
                with connection() as conn:
                    self._commit(conn, batch)
        finally:
            self.release()

    def _commit(self, conn: sqlite3.Connection, batch: list[_Write]) -> None:
        outcomes: list[tuple[BaseException | None, Any, Any]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for _, _, body, args, fast in batch:
                conn.execute("SAVEPOINT write")
                fast.hold()  # what the write teaches its store waits for the commit
                try:
                    out = body(conn, *args)
                except Exception as failed:  # noqa: BLE001 - the write's own outcome, given to its caller
                    outcomes.append((failed, None, fast.held()))
                    conn.execute("ROLLBACK TO write")
                else:
                    outcomes.append((None, out, fast.held()))
                    if out is SLOW:
                        conn.execute("ROLLBACK TO write")
                finally:
                    fast.held()
                conn.execute("RELEASE write")
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if not isinstance(exc, Exception):
                raise
            outcomes = [(exc, None, None)] * len(batch)
        for (loop, fut, _, _, fast), (error, out, learned) in zip(batch, outcomes, strict=True):
            if error is None and out is not SLOW and learned is not None:
                fast.keep(learned)
            with contextlib.suppress(RuntimeError):  # its loop was closed
                loop.call_soon_threadsafe(_settle, fut, error, out)


def file_writes(path: str) -> FileWrites:
    """The writes of the database file at `path` in this process."""
    key = os.path.realpath(path)
    with _FILES_GUARD:
        found = _FILES.get(key)
        if found is None:
            found = _FILES[key] = FileWrites()
        return found


def _settle(fut: asyncio.Future[Any], exc: BaseException | None, out: Any) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(out)
