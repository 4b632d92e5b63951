"""`PostgresSessionStore`: snapshots in PostgreSQL, shared by many server processes.

This module owns the store's connections and transactions; the tables and
queries are `._pg_rows`'s, the rules every store shares `BaseSessionStore`'s.
A transaction runs on a pooled sync psycopg connection in a worker thread, and
a one-statement write or a read of a row (`._pg_fast`) on an async connection
of the caller's loop (`._pg_aio`), so that nothing blocks an event loop and
every call works from any thread or loop (the ``_sync`` twins run on a private
one).
Concurrency is the database's:

* a save locks the id and the row, runs the mutator, writes, commits
  (`._pg_rows` says how, and why it cannot deadlock on the rows it builds on);
* a claim is an insert that the first transaction wins in every process;
  the winner's pending row, and a save's audit records, are written in the
  same transaction;
* a transaction that Postgres aborted to break a lock cycle, or whose claim
  lost a race it could not see, wrote nothing: it runs again (mutator included);
* the tables are created on first use under an advisory lock, so two
  processes starting at once do not race on ``CREATE TABLE`` (and a
  database of an older schema version is migrated there, in place);
* a write that aborts a pending row's run notifies its id (``NOTIFY``, in
  its transaction), and one listening connection per store (`._pg_listen`)
  wakes the store's `wait_changed` waiters and ``on_change`` callbacks,
  whichever process wrote: a running turn notices an abort without polling;
* a read is one statement outside any transaction (a history that takes a
  second query is checked to be of the same revision of the row, and read
  again in one snapshot when it is not); the writes
  of an approval cycle (a new row, a claim with its pending row, a fenced
  final row with its audit) are one statement each when what they build on
  is known here and still holds (`._pg_fast`), else the transaction above;
* an answer's read of the pause it claims next (`get_snapshot_to_claim`) is
  answered from this process's copy of the row when it has one, and its
  claim claims only if the row is still that copy (`._pg_lend`): an
  approval cycle is three transactions, one per request and the claim.

psycopg is imported here only; ``import nb_agents`` never loads it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any, Concatenate, ParamSpec, TypeVar, Unpack

import anyio.to_thread

try:
    import psycopg
    import psycopg.conninfo
    import psycopg.errors
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("PostgresSessionStore needs psycopg 3: pip install 'nb_agents[postgres]'") from exc

from ..types import SessionSnapshot
from ._base import SaveHow, with_effective_status
from ._delta import MessageCache
from ._pg_aio import LoopConnections, Statements, drive
from ._pg_fast import MOVED, SLOW, Fast, RecentRows
from ._pg_lend import Lender, Lent, still_holds
from ._pg_listen import PgListener
from ._pg_pool import PgPool
from ._pg_rows import ClaimRacedError, PgRows
from ._pg_schema import init_schema
from ._threaded import ThreadedSessionStore, Workers
from .base import HEARTBEAT_TIMEOUT, ReadAgainError, ResumeClaim, SnapshotMutator

__all__ = ["PostgresSessionStore"]

T = TypeVar("T")
P = ParamSpec("P")

_WRITE = "BEGIN"
_DEADLOCK_RETRIES = 3
# histories kept: a server with many turns in flight still finds each one's parent (its
# final row is one statement only when the parent's history is at hand: `._pg_fast`)
_CACHE_ROWS = 1024


class PostgresSessionStore(ThreadedSessionStore[PgRows]):
    """A session store in a PostgreSQL database, for several server processes.

    Safe to share between threads, event loops and processes: every operation
    is one transaction, and resume claims are a compare-and-swap in the
    database, so exactly one of two racing resumes wins wherever they run.
    The tables (``nb_agents_snapshots``, ``nb_agents_sessions``,
    ``nb_agents_claims``, ``nb_agents_audit``, ``nb_agents_meta``) are created
    on first use in the first schema of the connection's search path; to keep
    them apart, put ``options=-csearch_path=myschema`` in the DSN. Waiting
    for a row (`wait_changed`) holds one more connection, for LISTEN.

    Args:
        dsn: A libpq connection string or URL (``"postgresql://user@host/db"``).
        pool_size: Connections kept for reuse, and at most in use at once: for
            transactions, per process, and for one-statement writes and reads,
            per event loop (more callers wait for one). 0: none kept, no bound.
        heartbeat_timeout: When a pending row whose heartbeat is older reads
            ``expired`` (seconds or a `timedelta`; every process should agree).

    Example:
        >>> store = PostgresSessionStore("postgresql://agents@127.0.0.1/agents")  # connects on first use
        >>> store
        PostgresSessionStore('host=127.0.0.1 dbname=agents user=agents')
    """

    poll_interval = 0.1

    def __init__(
        self, dsn: str, *, pool_size: int = 8, heartbeat_timeout: float | timedelta = HEARTBEAT_TIMEOUT
    ) -> None:
        super().__init__(heartbeat_timeout=heartbeat_timeout)
        try:
            params = psycopg.conninfo.conninfo_to_dict(dsn)
        except psycopg.ProgrammingError as exc:
            raise ValueError(
                f"PostgresSessionStore: the DSN is not a valid libpq connection string: {exc}"
            ) from None
        if pool_size < 0:
            raise ValueError(f"pool_size must be 0 or more, got {pool_size}")
        self._dsn = dsn
        # what the repr shows; never the password
        self._where = " ".join(f"{k}={params[k]}" for k in ("host", "port", "dbname", "user") if k in params)
        self._cache = MessageCache(_CACHE_ROWS)
        self._recent = RecentRows()
        self._lender = Lender()
        # the pool's callbacks do not hold the store: no reference cycle, so a store
        # dropped without `close` frees its pool, which closes its connections
        self._pool = PgPool(dsn, pool_size, partial(init_schema, repr(self)), _forked(self))
        # a thread per pooled connection runs the calls (0: no bound on connections, as anyio's 40)
        self._workers = Workers(pool_size or 40, "nb-agents-pg")
        self._on_loops = LoopConnections(dsn, pool_size)
        self._listener = PgListener(dsn, self._changes)
        weakref.finalize(self, self._listener.close)

    def __repr__(self) -> str:
        return f"PostgresSessionStore({self._where!r})"

    def close(self) -> None:
        """Close the pooled connections and stop listening (the store reconnects if used again)."""
        self._listener.close()
        self._pool.close()
        self._on_loops.close()
        self._workers.close()
        self._cache.clear()
        self._recent.clear()

    notices_other_processes = True  # wait_changed wakes on a save from any process (NOTIFY)

    async def wait_changed(self, snapshot_id: str, timeout: float) -> None:
        """Until the row is written by any process (LISTEN/NOTIFY), or `timeout` seconds.

        Returns at once when the row is no longer pending (see `SessionStore.wait_changed`).
        """
        self._listener.start()
        await super().wait_changed(snapshot_id, timeout)

    def on_change(self, snapshot_id: str, callback: Callable[[], None]) -> Callable[[], None]:
        """As `wait_changed`, a callback: on a save of the row by any process (LISTEN/NOTIFY)."""
        self._listener.start()
        return super().on_change(snapshot_id, callback)

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self.close)

    async def _in_thread(self, fn: Callable[[], T]) -> T:
        return await self._workers.run(fn)  # the fast paths' statements and the general path's transactions

    async def get_snapshot(self, snapshot_id: str) -> SessionSnapshot | None:
        """The row with this id (``expired`` computed on read), or None: one statement, on the
        caller's loop (`._pg_fast`); in one snapshot when a write came between it and its history."""
        got = await self._statements(partial(self._fast().read, snapshot_id), idempotent=True)
        if isinstance(got, str):  # SLOW: read it again in the general path
            return await super().get_snapshot(snapshot_id)
        return with_effective_status(got, self.heartbeat_timeout)

    async def get_latest(self, session_id: str) -> SessionSnapshot | None:
        """The session's newest leaf (``expired`` computed on read), or None: as `get_snapshot`."""
        got = await self._statements(partial(self._fast().latest, session_id), idempotent=True)
        if isinstance(got, str):  # SLOW: read it again in the general path
            return await super().get_latest(session_id)
        return with_effective_status(got, self.heartbeat_timeout)

    def _fast(self) -> Fast:
        """The one-statement calls on what this process knows now (a forked child starts anew)."""
        return Fast(self._recent, self._cache)

    async def save_snapshot(
        self, snapshot_id: str, mutator: SnapshotMutator, **how: Unpack[SaveHow]
    ) -> SessionSnapshot | None:
        """Atomic read-modify-write of one row; returns what was written (see `SessionStore`)."""
        done: SessionSnapshot | str | None = SLOW  # a save that adds session rules: the general path
        if not how.get("add_rules"):  # a known row in a statement or a few (`._pg_fast`)
            save = partial(self._fast().save, snapshot_id, mutator, how.get("audit", ()), how.get("fence"))
            done = await self._statements(save, idempotent=False)
        if isinstance(done, str):  # SLOW: nothing was written; the general path decides
            return await super().save_snapshot(snapshot_id, mutator, **how)
        if done is not None and not self._changes.quiet:  # wake the row's waiters, if any
            self._changes.notify(snapshot_id)
        return done

    async def get_snapshot_to_claim(self, snapshot_id: str) -> SessionSnapshot | None:
        """`get_snapshot`, for an answer that claims the row next, in this task.

        A settled row that this process wrote or read is answered from its copy,
        without a round trip; the claim (`claim_resume`, in this task) then claims
        only if the row is still that copy, and else raises `ReadAgainError`
        without writing anything (the next read of the row reads the database).
        """
        snap = self._lender.lend(self._recent.copy(snapshot_id), self._cache, snapshot_id)
        return snap if snap is not None else await self.get_snapshot(snapshot_id)

    async def claim_resume(
        self, snapshot_id: str, digest: str, child_id: str, *, pending: SessionSnapshot | None = None
    ) -> ResumeClaim | None:
        """Claim the resume of `snapshot_id`: None if this call won, else the current claim.

        Raises `ReadAgainError` (writing nothing) when the row was answered from this
        process's copy (`get_snapshot_to_claim`) and is no longer that.
        """
        lent = self._lender.lent(snapshot_id)
        claim = ResumeClaim(digest, child_id)
        done = await self._statements(
            partial(self._fast().claim, snapshot_id, claim, pending, lent), idempotent=True
        )
        if lent is not None and (
            done == MOVED or (done == SLOW and not await self._holds(snapshot_id, lent))
        ):
            self._recent.forget(snapshot_id)
            self._lender.drop(snapshot_id)
            raise ReadAgainError(f"Snapshot {snapshot_id} changed after it was read; read it again.")
        if isinstance(done, str):  # SLOW: the general path reads what is there (nothing was written)
            return await super().claim_resume(snapshot_id, digest, child_id, pending=pending)
        won = done[1]  # (won, the current claim): None when won
        if won is None and pending is not None and not self._changes.quiet:
            self._changes.notify(child_id)
        return won

    async def _statements(self, make: Callable[[], Statements[T]], *, idempotent: bool) -> T:
        """A one-statement call of `._pg_fast` (a write or a read; `make` makes its generator): on a
        connection of the running loop, or in a worker thread where psycopg cannot wait on the loop."""
        if LoopConnections.usable(asyncio.get_running_loop()):
            if not self._pool.ready:
                await self._in_thread(partial(self._pool.run, _nothing, idempotent=True))  # the schema
            return await self._on_loops.run(make, idempotent=idempotent)
        run = partial(self._pool.run, lambda conn: drive(make(), conn), idempotent=idempotent)
        return await self._in_thread(run)

    async def _holds(self, snapshot_id: str, lent: Lent) -> bool:
        check = partial(still_holds, snapshot_id=snapshot_id, lent=lent)
        return await self._in_thread(partial(self._pool.run, check, idempotent=True))

    # -- transactions (in a worker thread) ----------------------------------------
    def _transaction(
        self, write: bool, fn: Callable[Concatenate[PgRows, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(rows, *args, **kwargs)`` in one transaction; what it wrote is cached once committed.

        A read runs outside any transaction: each of its statements sees what was
        committed when it began (`PgRows.get` reads a row and its history consistently).
        """
        if not write:

            def read(conn: psycopg.Connection[Any]) -> tuple[T, PgRows]:
                rows = PgRows(conn, self._cache)
                return fn(rows, *args, **kwargs), rows

            got, seen = self._pool.run(read, idempotent=True)
            self._remember(seen)
            return got
        deadlocks = 0
        while True:
            try:
                with self._pool.transaction(_WRITE) as conn:
                    rows = PgRows(conn, self._cache)
                    out = fn(rows, *args, **kwargs)
                break
            except psycopg.errors.DeadlockDetected:
                # Postgres broke a lock cycle by aborting this transaction: nothing
                # was written, so it is run again (the mutator with it)
                deadlocks += 1
                if deadlocks == _DEADLOCK_RETRIES:
                    raise
            except ClaimRacedError:
                pass  # rolled back; the next run reads the claim that won (or claims anew if released)
        for seq, rev, messages in rows.written:
            self._cache.put(seq, rev, messages)
        self._remember(rows)
        return out

    def _remember(self, rows: PgRows) -> None:
        for snapshot_id, seq, rev, snap, copy in rows.seen:
            self._recent.note(snapshot_id, seq, rev, snap, copy)


def _nothing(conn: psycopg.Connection[Any]) -> None:
    """A call on the pool: its first connection creates the schema."""


def _forked(store: PostgresSessionStore) -> Callable[[], None]:
    """What a forked child's pool calls: a new cache, writes since the fork are not in the parent's."""
    ref = weakref.ref(store)

    def forked() -> None:
        live = ref()
        if live is not None:
            live._cache = MessageCache(_CACHE_ROWS)
            live._recent = RecentRows()

    return forked
