"""`SqliteSessionStore`: snapshots in one SQLite file, shared by threads and processes.

This module owns the store's connections and where its calls run; the
calls of an approval cycle on rows this process knows are `._sqlite_fast`'s
(a read, a save, a claim: one statement, or a short transaction), every
other call the general path's: the queries of `._sqlite_rows` in one
transaction, under the rules every store shares (`BaseSessionStore`). The
tables are `._sqlite_schema`'s, the compact values `._sqlite_codec`'s. A
turn writes bytes in proportion to what it adds: a row keeps only the
messages its turn added on top of its parent's, and a read rebuilds the
history with one recursive query over that chain.

Every call is atomic (a single statement, or a transaction; writes under
``BEGIN IMMEDIATE``, so two processes on the same file serialize). A call
runs right on the calling event loop with a busy timeout of 0; the writes
of one pass of the loop after its first commit together at the pass's end
(group commit, `._sqlite_writes`). When a writer of this process holds the
database (a worker thread's), a write waits for it on the loop and then
runs there; when another process's does, SQLite answers "busy" at once,
and the call runs again in a worker thread that waits for the lock (up to
30 s). Only what committed is remembered. So a turn costs no thread hops
unless another process contends; and the loop never blocks on a lock, on
an fsync (``synchronous="FULL"`` writes, and the periodic WAL checkpoint,
run in the thread), or on another process. The
database runs in WAL mode: readers never wait for the writer. Pooled
connections are closed by `close`, or when the store is garbage-collected,
or at interpreter exit; a forked child keeps the ones it inherited
referenced and unused (SQLite forbids using them there), and forgets what
its parent knew.

A save wakes the `wait_changed` waiters of its row in this process (every
store of the same file shares them); a save from another process is noticed
only when the waiter's timeout runs out. A database of schema version 2 is
migrated to version 3 in place on first use (`._sqlite_schema`); an older or
newer one is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar, Unpack

import anyio.to_thread

from .._sync import reset_after_fork
from ..types import SessionSnapshot
from ._base import SLOW, BaseSessionStore, SaveHow, with_effective_status
from ._changes import shared
from ._sqlite_fast import Fast
from ._sqlite_rows import Rows
from ._sqlite_schema import init_schema
from ._sqlite_writes import file_writes
from .base import HEARTBEAT_TIMEOUT, ResumeClaim, SnapshotMutator

__all__ = ["SqliteSessionStore"]

T = TypeVar("T")
P = ParamSpec("P")

_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
_POOL_MAX = 8
_BUSY_TIMEOUT_MS = 30_000
# Connections on the loop never checkpoint; after every Nth write a worker thread
# runs a passive checkpoint (it waits for no writer, and no writer waits for it):
# at about 5 pages a write, about SQLite's default of one per 1000 pages of WAL.
_CHECKPOINT_EVERY = 200
_RESTART_FRAMES = 10_000  # about 40 MB of WAL
_SQLITE_BUSY = 5
_BUSY: Any = object()  # what `_call` got from a write on the loop that found the database busy


# Connections a forked child inherited: never used, closed or collected there.
_INHERITED: list[sqlite3.Connection] = []


def _close_pools(pools: dict[bool, list[sqlite3.Connection]], pid: int) -> None:
    if os.getpid() == pid:  # a fork's copy belongs to the parent
        for pool in pools.values():
            while pool:
                pool.pop().close()


class SqliteSessionStore(BaseSessionStore[Rows]):
    """A session store in one SQLite file: the embedded, persistent default.

    Safe to share between threads, event loops and processes (several kernels or
    server workers on one file). Resume claims are a compare-and-swap in the
    database, so exactly one of two racing resumes wins.

    Args:
        path: The database file; created with its tables if missing.
        synchronous: SQLite's ``PRAGMA synchronous``. ``"NORMAL"`` (the default)
            survives a crash of the process; ``"FULL"`` also a power loss.
        heartbeat_timeout: When a pending row whose heartbeat is older reads
            ``expired`` (seconds or a `timedelta`; every process on the file
            should agree).

    Example:
        >>> import tempfile, os
        >>> store = SqliteSessionStore(os.path.join(tempfile.mkdtemp(), "agents.db"))
        >>> store.close()
    """

    poll_interval = 0.1

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        heartbeat_timeout: float | timedelta = HEARTBEAT_TIMEOUT,
    ) -> None:
        if synchronous.upper() not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {', '.join(_SYNCHRONOUS)}, got {synchronous!r}")
        self.path = os.fspath(path)
        if self.path == ":memory:" or not self.path:
            raise ValueError("SqliteSessionStore needs a file path; use InMemorySessionStore for memory")
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        super().__init__(heartbeat_timeout=heartbeat_timeout, changes=shared(os.path.realpath(self.path)))
        self._synchronous = synchronous.upper()
        # writes that fsync at each commit never run on the loop
        self._inline_writes = self._synchronous in ("OFF", "NORMAL")
        self._pools: dict[bool, list[sqlite3.Connection]] = {True: [], False: []}  # by "inline"
        self._pool_lock = threading.Lock()
        self._schema_lock = threading.Lock()
        self._pid = os.getpid()
        self._finalizer = weakref.finalize(self, _close_pools, self._pools, self._pid)
        self._ready = False
        self._writes = 0  # on the loop, since the last checkpoint
        self._checkpointing = False
        self._fast = Fast()  # the rows this process knows, the calls on them, the histories
        self._writes_of_file = file_writes(self.path)
        reset_after_fork(self, SqliteSessionStore._forked)

    def __repr__(self) -> str:
        return f"SqliteSessionStore({self.path!r})"

    def _forked(self) -> None:
        """In a forked child no thread of the parent holds the pool's lock, nor checkpoints (the
        rest of what the child must not share is dropped on its first call: `_connection`)."""
        self._pool_lock = threading.Lock()
        self._writes, self._checkpointing = 0, False

    def close(self) -> None:
        """Close the pooled connections (the store reconnects if used again)."""
        with self._pool_lock:
            conns = [*self._pools[True], *self._pools[False]]
            for pool in self._pools.values():
                pool.clear()
        for conn in conns:
            conn.close()
        self._fast.clear()

    # -- the calls of an approval cycle: known rows first (`._sqlite_fast`) --------------
    async def get_snapshot(self, snapshot_id: str) -> SessionSnapshot | None:
        """The row with this id (``expired`` computed on read), or None."""
        got = await self._call(False, self._fast.read, snapshot_id)
        if isinstance(got, str):  # SLOW: its history takes a second query
            return await super().get_snapshot(snapshot_id)
        if got is not None and got.status in (None, "pending"):  # no status reads "completed"
            return with_effective_status(got, self.heartbeat_timeout)
        return got

    async def save_snapshot(
        self, snapshot_id: str, mutator: SnapshotMutator, **how: Unpack[SaveHow]
    ) -> SessionSnapshot | None:
        """Atomic read-modify-write of one row; returns what was written (see `SessionStore`)."""
        # a known row in a statement or a few (`._sqlite_fast`); a save that adds session rules takes
        # the general path, which locks them too
        done: SessionSnapshot | str = SLOW
        if not how.get("add_rules"):
            audit, fence = how.get("audit", ()), how.get("fence")
            done = await self._call(True, self._fast.save, snapshot_id, mutator, audit, fence)
        if isinstance(done, str):  # SLOW: nothing was written; the general path decides
            return await super().save_snapshot(snapshot_id, mutator, **how)
        if not self._changes.quiet:  # wake the row's waiters, if any
            self._changes.notify(snapshot_id)
        return done

    async def claim_resume(
        self, snapshot_id: str, digest: str, child_id: str, *, pending: SessionSnapshot | None = None
    ) -> ResumeClaim | None:
        """Claim the resume of `snapshot_id`: None if this call won, else the current claim."""
        done = await self._call(True, self._fast.claim, snapshot_id, ResumeClaim(digest, child_id), pending)
        if done is not None:  # SLOW: the general path reads what is there (nothing was written)
            return await super().claim_resume(snapshot_id, digest, child_id, pending=pending)
        if pending is not None and not self._changes.quiet:
            self._changes.notify(child_id)
        return None

    async def get_rules(self, session_id: str) -> list[dict[str, Any]]:
        """The session's approval rules as they are now, oldest first."""
        return await self._call(False, self._fast.rules, session_id)

    # -- where a call runs --------------------------------------------------------
    async def _run(
        self, write: bool, fn: Callable[Concatenate[Rows, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(rows, *args, **kwargs)`` in one transaction (the general path), where `_call` runs it."""
        return await self._call(write, self._transaction, write, fn, args, kwargs)

    async def _call(self, write: bool, body: Callable[..., T], /, *args: Any) -> T:
        """``body(conn, *args)`` on a pooled connection: on the loop if the database is free, else
        in a thread. `body` runs its own statements (one, or a transaction).

        A read runs at once, and so do the writes of the first task to write in a pass
        of the loop (they follow one another anyway); other tasks' writes in the pass
        wait for its end and commit together, one transaction for all
        (`._sqlite_writes.FileWrites.flush`). A write that finds another writer of
        this process at work waits for it on the loop, then runs there; one that finds
        another process's writer (SQLite says busy) runs in a thread, which waits for
        the database. A write that found the database busy wrote nothing (its first
        statement was refused), so it runs again there.
        """
        if self._ready and self._pid == os.getpid() and (not write or self._inline_writes):
            files, now = self._writes_of_file, True
            if write:
                loop, task = asyncio.get_running_loop(), asyncio.current_task()
                key = (loop, self._connection)
                this_pass = files.passes.get(key)  # only this loop's thread reads or sets its key
                if this_pass is None:
                    this_pass = files.passes[key] = (task, [])
                    loop.call_soon(files.flush, key)
                now = this_pass[0] is task and files.acquire(False)
            try:
                if now:
                    pool = self._pools[True]
                    with self._pool_lock:
                        conn = pool.pop() if pool else None
                    if conn is None:
                        conn = self._connect(True)
                    try:
                        out = body(conn, *args)
                    finally:
                        with self._pool_lock:
                            kept = not conn.in_transaction and len(pool) < _POOL_MAX
                            if kept:
                                pool.append(conn)
                        if not kept:
                            self._release(conn, True)
                else:
                    out = await files.join(key, body, args, self._fast)
            except sqlite3.OperationalError as exc:
                if getattr(exc, "sqlite_errorcode", _SQLITE_BUSY) & 0xFF != _SQLITE_BUSY:
                    raise
                out = _BUSY
            finally:
                if write and now:
                    # `files.release()` written out: every inline write passes here (one call less)
                    files.unlock()
                    if files.waiters:  # a pass of another loop waits for the file
                        files.wake()
            if out is not _BUSY:
                if write:
                    self._writes += 1
                    if self._writes >= _CHECKPOINT_EVERY and not self._checkpointing:
                        self._writes, self._checkpointing = 0, True  # one at a time
                        try:
                            await anyio.to_thread.run_sync(self._checkpoint)
                        finally:
                            self._checkpointing = False
                return out
        if write:  # in a worker thread, committed with the writes that wait there meanwhile
            return await self._writes_of_file.batched(body, args, self._fast, lambda: self._connection(False))
        return await anyio.to_thread.run_sync(self._read, body, args)

    def _read(self, body: Callable[..., T], args: Any) -> T:
        """A read of `_call` in a worker thread (it waits for the database)."""
        with self._connection(False) as conn:
            return body(conn, *args)

    def _transaction(
        self, conn: sqlite3.Connection, write: bool, fn: Callable[..., T], args: Any, kwargs: Any
    ) -> T:
        """``fn(rows, *args, **kwargs)`` in a transaction (its own, or a batch's); what it read
        and wrote is kept once committed."""
        own = not conn.in_transaction
        if own:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        rows = Rows(conn, self._fast)
        try:
            out: T = fn(rows, *args, **kwargs)
        except BaseException:
            if own:
                conn.execute("ROLLBACK")
            raise
        if own:
            conn.execute("COMMIT")
        for seq, rev, messages in rows.written:
            self._fast.put(seq, rev, messages)
        self._fast.remember(rows.seen)
        return out

    def _checkpoint(self) -> None:
        """Copy the WAL into the database as far as no reader needs it (and fsync), off the loop.

        Under steady writes a passive checkpoint never catches up with the writers, so the
        WAL is never started over and grows without end: once it holds `_RESTART_FRAMES`,
        the checkpoint holds this process's writers back and truncates it (they wait on
        their loops meanwhile: the frames written since the passive pass, and one fsync).
        """
        with self._connection(False) as conn, contextlib.suppress(sqlite3.Error):
            _, frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if frames >= _RESTART_FRAMES:
                self._writes_of_file.acquire()
                try:
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                finally:
                    self._writes_of_file.release()

    # -- connections --------------------------------------------------------------
    @contextmanager
    def _connection(self, inline: bool) -> Iterator[sqlite3.Connection]:
        with self._pool_lock:
            if self._pid != os.getpid():
                # a forked child must not use its parent's connections (nor close them), nor trust its cache
                for pool in self._pools.values():
                    _INHERITED.extend(pool)
                    pool.clear()
                self._pid, self._ready = os.getpid(), False
                self._schema_lock = threading.Lock()  # a thread of the parent may have held it
                self._finalizer.detach()
                self._finalizer = weakref.finalize(self, _close_pools, self._pools, self._pid)
                self._fast = Fast()
            pool = self._pools[inline]
            conn = pool.pop() if pool else None
        if conn is None:
            conn = self._connect(inline)
        try:
            yield conn
        finally:
            self._release(conn, inline)

    def _release(self, conn: sqlite3.Connection, inline: bool) -> None:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")  # a failed BEGIN or COMMIT left it open
            except sqlite3.Error:
                conn.close()
                return
        with self._pool_lock:
            pool = self._pools[inline]
            if len(pool) < _POOL_MAX:
                pool.append(conn)
                return
        conn.close()

    def _connect(self, inline: bool) -> sqlite3.Connection:
        timeout_ms = 0 if inline else _BUSY_TIMEOUT_MS
        conn = sqlite3.connect(
            self.path, timeout=timeout_ms / 1000, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {timeout_ms}")
            with self._schema_lock:  # once, not by every connection opened before it is done
                if not self._ready:
                    init_schema(conn, self.path)
                    self._ready = True
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            if inline:
                conn.execute("PRAGMA wal_autocheckpoint = 0")
        except BaseException:
            conn.close()
            raise
        return conn
