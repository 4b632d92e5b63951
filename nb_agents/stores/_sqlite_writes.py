"""Where `SqliteSessionStore`'s writes wait: one writer per file in this process, and
group commit, on the event loop and in worker threads.

One write at a time per database file in this process (`FileWrites`): a
lock that writers take in turn, woken at once when it frees, instead of
SQLite's busy handler, which sleeps in growing steps and turns a short wait
into a long tail under load. A write on an event loop never blocks on it.

On a loop (`SqliteSessionStore._call`), the first task to write in a pass
of the loop writes at once, each write its own transaction (its writes
follow one another anyway); the writes of other tasks in the same pass
(other requests' turns, under load) wait for the pass's end (`FileWrites.join`)
and run there together (`FileWrites.flush`), one ``BEGIN IMMEDIATE`` ...
``COMMIT`` for all: a commit costs about as much as the statements of a
whole write, and a batch shares it (and the pages it writes). A pass whose
writes find the lock held (a worker thread's batch, another loop's pass)
waits for it on its loop.

A write that cannot run on its loop (``synchronous="FULL"``, whose commits
fsync; the database held by another process; the store's first use) runs in
a worker thread, batched (`FileWrites.batched`): the writes that arrive while
one batch commits go together in the next (one fsync for all).

In a batch of either kind each write has a savepoint: one that raises, or
finds that its known-row path does not hold, is rolled back alone. Each
caller learns its outcome once the batch committed, and what its write
taught its store (`._sqlite_fast.Fast.hold`) is kept only then. A caller
cancelled before its batch ran writes nothing.
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

from .._sync import reset_after_fork
from ._sqlite_fast import SLOW, Fast

__all__ = ["FileWrites", "file_writes"]

T = TypeVar("T")

_FILES: dict[str, FileWrites] = {}
_FILES_GUARD = threading.Lock()

# A write waiting for its batch: its loop and future, its body and arguments, its store's `Fast`.
_Write = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...], Fast]
# A store's connections: ``connection(inline)`` lends one (`SqliteSessionStore._connection`).
Lender = Callable[[bool], AbstractContextManager[sqlite3.Connection]]
# A pass of a loop, for one store: the loop and the store's `Lender`.
PassKey = tuple[asyncio.AbstractEventLoop, Lender]


class FileWrites:
    """The writes of one database file in this process: one at a time, batched in threads."""

    def __init__(self) -> None:
        self._start()
        # in a forked child the file starts free: a lock a parent's thread held (a batch
        # committing) would never be released, and the writes waiting are the parent's
        reset_after_fork(self, FileWrites._start)

    def _start(self) -> None:
        self._lock = threading.Lock()
        # the lock's own methods, no call in between: ``acquire(blocking=True)``, and
        # ``unlock()``, which `release` follows with `wake` when a loop waits
        self.acquire = self._lock.acquire
        self.unlock = self._lock.release
        self._guard = threading.Lock()
        self.waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._queue: list[_Write] = []
        # each loop's pass in which a task wrote (`SqliteSessionStore._call`), till its end (`flush`);
        # a loop's thread alone reads or sets its keys
        self.passes: dict[PassKey, tuple[asyncio.Task[Any] | None, list[_Write]]] = {}

    def release(self) -> None:
        """Free the file, and wake the loops that wait for it."""
        self.unlock()
        if self.waiters:  # a waiter added meanwhile sees the lock free (see `flush`)
            self.wake()

    def wake(self) -> None:
        """Wake the loops that wait for the lock (`flush`)."""
        with self._guard:
            waiters, self.waiters = self.waiters, []
        for loop, fut in waiters:
            _tell(loop, fut, None, None, False)

    # -- group commit on the loop -------------------------------------------------------
    async def join(self, key: PassKey, body: Callable[..., T], args: tuple[Any, ...], fast: Fast) -> T:
        """``body(conn, *args)`` at the end of the loop's pass `key` (`flush`), with the pass's
        other waiting writes; what it returned, once they committed.

        A caller cancelled while its write waits writes nothing; one cancelled once it ran
        is cancelled as any ``await`` of a future that completed (as in `batched`): what it
        wrote stays, and reads as it was written.
        """
        loop = key[0]
        fut: asyncio.Future[T] = loop.create_future()
        self.passes[key][1].append((loop, fut, body, args, fast))
        return await fut  # cancelled before its pass ended, the future is too: `flush` leaves it out

    def flush(self, key: PassKey) -> None:
        """At the end of a pass of a loop: its waiting writes, one alone as it is, several in one
        transaction (`_commit`), once the file is free."""
        loop, connection = key
        this_pass = self.passes.get(key)
        if this_pass is None or not this_pass[1]:  # no write waits: its first task's ran at once
            self.passes.pop(key, None)
            return
        if not self.acquire(False):  # a worker thread's batch, or another loop's pass: after it
            waiter: asyncio.Future[None] = loop.create_future()
            with self._guard:
                self.waiters.append((loop, waiter))
            waiter.add_done_callback(lambda _: self.flush(key))
            if not self._lock.locked():  # it was released before this waiter was added
                self.wake()
            return
        try:
            gone = self.passes.pop(key, None)
            batch = [w for w in gone[1] if not w[1].cancelled()] if gone is not None else []
            if batch:
                try:
                    with connection(True) as conn:
                        if len(batch) == 1:
                            _, fut, body, args, _ = batch[0]
                            _settle(fut, None, body(conn, *args))
                        else:
                            self._commit(conn, batch, True)
                except BaseException as exc:  # noqa: BLE001 - each write's outcome not told yet (busy: none ran)
                    _tell_all(batch, exc, True)
        finally:
            self.release()

    # -- group commit in worker threads -------------------------------------------------
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
                try:
                    with connection() as conn:
                        self._commit(conn, batch, False)
                except BaseException as exc:  # noqa: BLE001 - no connection: none ran (each caller is told)
                    _tell_all(batch, exc, False)
        finally:
            self.release()

    def _commit(self, conn: sqlite3.Connection, batch: list[_Write], here: bool) -> None:
        """The batch in one transaction, a savepoint per write; each caller's outcome set
        (`here`: on this loop, else from this worker thread). Whatever a write raises is its
        own outcome, an interrupt too (not an `Exception`: its caller raises it); whatever
        stops the transaction is every write's. No caller is left waiting."""
        outcomes: list[tuple[BaseException | None, Any, Any]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for _, _, body, args, fast in batch:
                conn.execute("SAVEPOINT write")
                fast.hold()  # what the write teaches its store waits for the commit
                try:
                    out = body(conn, *args)
                except BaseException as failed:  # noqa: BLE001 - the write's own outcome, given to its caller
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
        except BaseException as exc:  # noqa: BLE001 - every write's outcome, given to its caller
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            outcomes = [(exc, None, None)] * len(batch)
        for (loop, fut, _, _, fast), (error, out, learned) in zip(batch, outcomes, strict=True):
            if error is None and out is not SLOW and learned is not None:
                fast.keep(learned)
            _tell(loop, fut, error, out, here)


def _after_fork() -> None:
    global _FILES_GUARD
    _FILES_GUARD = threading.Lock()  # a parent's thread may have held it (each file resets itself)


os.register_at_fork(after_in_child=_after_fork)


def file_writes(path: str) -> FileWrites:
    """The writes of the database file at `path` in this process."""
    key = os.path.realpath(path)
    with _FILES_GUARD:
        found = _FILES.get(key)
        if found is None:
            found = _FILES[key] = FileWrites()
        return found


def _tell_all(batch: list[_Write], exc: BaseException, here: bool) -> None:
    """Fail every write of `batch` whose caller has no outcome yet with `exc`."""
    for loop, fut, *_ in batch:
        _tell(loop, fut, exc, None, here)


def _tell(
    loop: asyncio.AbstractEventLoop, fut: asyncio.Future[Any], exc: BaseException | None, out: Any, here: bool
) -> None:
    """Give a write's caller its outcome: at once `here` (on its loop), else from this thread."""
    if here:
        _settle(fut, exc, out)
        return
    with contextlib.suppress(RuntimeError):  # its loop was closed
        loop.call_soon_threadsafe(_settle, fut, exc, out)


def _settle(fut: asyncio.Future[Any], exc: BaseException | None, out: Any) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(out)
