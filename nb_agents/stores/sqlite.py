"""`SqliteSessionStore`: snapshots in one SQLite file, shared by threads and processes.

This module owns the SQLite schema and queries. Histories are stored with the
delta encoding of `._delta` (shared with the Postgres store): a snapshot row
keeps only the messages its turn added on top of its base row (its parent,
when the parent has a state). A read rebuilds the history with one recursive
query over the base chain, so a turn writes bytes in proportion to what it
adds, not to the whole history.

Every operation is one transaction (writes under ``BEGIN IMMEDIATE``, so two
processes on the same file serialize), run in a worker thread so that it never
blocks an event loop. Connections are pooled per store; each is used by one
thread at a time. The database runs in WAL mode: readers never wait for the
writer.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio.to_thread

from ..errors import FailedPreconditionError
from ..types import Message, SessionSnapshot
from ._delta import (
    MessageCache,
    decode_audit,
    decode_snapshot,
    encode_row,
    history,
    rebased_tail,
    shared_prefix,
    to_json,
)
from .base import AuditRecord, ResumeClaim, SnapshotMutator, apply_mutator, with_effective_status

__all__ = ["SqliteSessionStore"]

T = TypeVar("T")

_SCHEMA_VERSION = 1
_SCHEMA = (
    # seq orders rows by insertion and is what a row's base points at: a base
    # is always an older row (base_seq < seq), so the chain cannot loop.
    # created_at is '' when unset, to sort as `pick_leaf` does; the index on
    # (session_id, created_at, snapshot_id) finds the newest leaf without a sort.
    """CREATE TABLE IF NOT EXISTS snapshots (
        seq INTEGER PRIMARY KEY,
        snapshot_id TEXT NOT NULL UNIQUE,
        session_id TEXT,
        parent_id TEXT,
        created_at TEXT NOT NULL,
        rev INTEGER NOT NULL,
        meta TEXT NOT NULL,
        state TEXT,
        base_seq INTEGER,
        base_len INTEGER NOT NULL,
        tail TEXT)""",
    "CREATE INDEX IF NOT EXISTS snapshots_session ON snapshots (session_id, created_at, snapshot_id)",
    "CREATE INDEX IF NOT EXISTS snapshots_parent ON snapshots (parent_id)",
    "CREATE INDEX IF NOT EXISTS snapshots_base ON snapshots (base_seq) WHERE base_seq IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS claims (
        snapshot_id TEXT PRIMARY KEY, digest TEXT NOT NULL, child_id TEXT NOT NULL) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, record TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS audit_session ON audit (session_id, seq)",
)
_COLS = "seq, rev, meta, state, base_seq, base_len, tail"
_BY_ID = f"SELECT {_COLS} FROM snapshots WHERE snapshot_id = ?"
_LEAF = f"""SELECT {_COLS} FROM snapshots s WHERE s.session_id = ?
    AND NOT EXISTS (SELECT 1 FROM snapshots c WHERE c.parent_id = s.snapshot_id AND c.session_id = ?)
    ORDER BY s.created_at DESC, s.snapshot_id DESC LIMIT 1"""
_CHAIN = """WITH RECURSIVE chain(depth, seq, rev, base_seq, base_len, tail) AS (
        SELECT 0, seq, rev, base_seq, base_len, tail FROM snapshots WHERE seq = ?
        UNION ALL
        SELECT c.depth + 1, s.seq, s.rev, s.base_seq, s.base_len, s.tail
        FROM snapshots s JOIN chain c ON s.seq = c.base_seq)
    SELECT seq, rev, base_len, tail FROM chain ORDER BY depth"""
_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
_POOL_MAX = 8

# (seq, rev, meta, state, base_seq, base_len, tail)
_Row = tuple[int, int, str, str | None, int | None, int, str | None]


class SqliteSessionStore:
    """A session store in one SQLite file: the embedded, persistent default.

    Safe to share between threads, event loops and processes (several kernels or
    server workers on one file). Resume claims are a compare-and-swap in the
    database, so exactly one of two racing resumes wins.

    Args:
        path: The database file; created with its tables if missing.
        synchronous: SQLite's ``PRAGMA synchronous``. ``"NORMAL"`` (the default)
            survives a crash of the process; ``"FULL"`` also a power loss.

    Example:
        >>> import tempfile, os
        >>> store = SqliteSessionStore(os.path.join(tempfile.mkdtemp(), "agents.db"))
        >>> store.close()
    """

    poll_interval = 0.1

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "NORMAL") -> None:
        if synchronous.upper() not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {', '.join(_SYNCHRONOUS)}, got {synchronous!r}")
        self.path = os.fspath(path)
        if self.path == ":memory:" or not self.path:
            raise ValueError("SqliteSessionStore needs a file path; use InMemorySessionStore for memory")
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        self._synchronous = synchronous.upper()
        self._pool: list[sqlite3.Connection] = []
        self._pool_lock = threading.Lock()
        self._pid = os.getpid()
        self._ready = False
        self._cache = MessageCache()

    def __repr__(self) -> str:
        return f"SqliteSessionStore({self.path!r})"

    # -- the protocol -----------------------------------------------------------
    async def get_snapshot(self, snapshot_id: str) -> SessionSnapshot | None:
        return with_effective_status(await self._run(lambda: self._read(_BY_ID, (snapshot_id,))))

    async def get_latest(self, session_id: str) -> SessionSnapshot | None:
        return with_effective_status(await self._run(lambda: self._read(_LEAF, (session_id, session_id))))

    async def save_snapshot(self, snapshot_id: str, mutator: SnapshotMutator) -> SessionSnapshot | None:
        return await self._run(lambda: self._save(snapshot_id, mutator))

    async def claim_resume(self, snapshot_id: str, digest: str, child_id: str) -> ResumeClaim | None:
        def claim() -> ResumeClaim | None:
            with self._tx("IMMEDIATE") as conn:
                cur = conn.execute(
                    "INSERT INTO claims (snapshot_id, digest, child_id) VALUES (?, ?, ?) "
                    "ON CONFLICT (snapshot_id) DO NOTHING",
                    (snapshot_id, digest, child_id),
                )
                if cur.rowcount == 1:
                    return None
                row = conn.execute(
                    "SELECT digest, child_id FROM claims WHERE snapshot_id = ?", (snapshot_id,)
                ).fetchone()
                return ResumeClaim(row[0], row[1])

        return await self._run(claim)

    async def release_claim(self, snapshot_id: str, child_id: str) -> None:
        sql = "DELETE FROM claims WHERE snapshot_id = ? AND child_id = ?"
        await self._run(lambda: self._write_many(sql, [(snapshot_id, child_id)]))

    async def session_ids(self) -> list[str]:
        sql = (
            "SELECT session_id FROM snapshots WHERE session_id IS NOT NULL "
            "GROUP BY session_id ORDER BY MIN(seq)"
        )
        return [r[0] for r in await self._run(lambda: self._fetch(sql, ()))]

    async def add_audit(self, records: Sequence[AuditRecord]) -> None:
        rows = [(r.session_id, to_json(r.to_dict())) for r in records]
        sql = "INSERT INTO audit (session_id, record) VALUES (?, ?)"
        if rows:
            await self._run(lambda: self._write_many(sql, rows))

    async def audit(self, session_id: str) -> list[AuditRecord]:
        sql = "SELECT record FROM audit WHERE session_id = ? ORDER BY seq"
        return [decode_audit(text) for (text,) in await self._run(lambda: self._fetch(sql, (session_id,)))]

    def close(self) -> None:
        """Close the pooled connections (the store reconnects if used again)."""
        with self._pool_lock:
            pool, self._pool = self._pool, []
        for conn in pool:
            conn.close()
        self._cache.clear()

    # -- reads and writes (in a worker thread) -----------------------------------
    def _read(self, sql: str, params: tuple[str, ...]) -> SessionSnapshot | None:
        with self._tx("DEFERRED") as conn:
            row: _Row | None = conn.execute(sql, params).fetchone()
            return self._decode(conn, row) if row is not None else None

    def _fetch(self, sql: str, params: tuple[str, ...]) -> list[Any]:
        with self._tx("DEFERRED") as conn:
            return conn.execute(sql, params).fetchall()

    def _write_many(self, sql: str, rows: list[tuple[str, str]]) -> None:
        with self._tx("IMMEDIATE") as conn:
            conn.executemany(sql, rows)

    def _save(self, snapshot_id: str, mutator: SnapshotMutator) -> SessionSnapshot | None:
        with self._tx("IMMEDIATE") as conn:
            row: _Row | None = conn.execute(_BY_ID, (snapshot_id,)).fetchone()
            current = self._decode(conn, row) if row is not None else None
            old = list(current.state.messages) if current is not None and current.state is not None else []
            new = apply_mutator(snapshot_id, current, mutator)
            if new is None:
                return None
            seq, rev, messages = self._write(conn, row, old, new)
        if messages is not None:
            self._cache.put(seq, rev, messages)
        return new

    def _write(
        self, conn: sqlite3.Connection, row: _Row | None, old: list[Message], new: SessionSnapshot
    ) -> tuple[int, int, list[Message] | None]:
        cols, messages = encode_row(
            new, lambda: self._base(conn, new.parent_id, row[0] if row is not None else None)
        )
        if row is None:
            cur = conn.execute(
                "INSERT INTO snapshots (snapshot_id, session_id, parent_id, created_at, meta, state, "
                "base_seq, base_len, tail, rev) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
                (new.snapshot_id, *cols),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid, 1, messages
        seq, rev = row[0], row[1] + 1
        conn.execute(
            "UPDATE snapshots SET session_id = ?, parent_id = ?, created_at = ?, meta = ?, state = ?, "
            "base_seq = ?, base_len = ?, tail = ?, rev = ? WHERE seq = ?",
            (*cols, rev, seq),
        )
        if old:
            self._rebase_dependents(conn, seq, old, shared_prefix(messages or [], old))
        return seq, rev, messages

    def _base(
        self, conn: sqlite3.Connection, parent_id: str | None, own_seq: int | None
    ) -> tuple[int, list[Message]] | None:
        """The row to delta-encode against (the parent) and its messages, if usable."""
        if not parent_id:
            return None
        row: _Row | None = conn.execute(_BY_ID, (parent_id,)).fetchone()
        if row is None or row[3] is None or (own_seq is not None and row[0] >= own_seq):
            return None
        return row[0], self._messages(conn, row)

    def _rebase_dependents(self, conn: sqlite3.Connection, seq: int, old: list[Message], keep: int) -> None:
        """A rewritten row kept only `keep` of its old messages: rows built on more get them inline."""
        deps = conn.execute(
            "SELECT seq, base_len, tail FROM snapshots WHERE base_seq = ? AND base_len > ?", (seq, keep)
        ).fetchall()
        for dep_seq, dep_len, dep_tail in deps:
            conn.execute(
                "UPDATE snapshots SET base_seq = ?, base_len = ?, tail = ? WHERE seq = ?",
                (seq if keep else None, keep, rebased_tail(old, keep, dep_len, dep_tail), dep_seq),
            )

    def _decode(self, conn: sqlite3.Connection, row: _Row) -> SessionSnapshot:
        return decode_snapshot(row[2], row[3], row[6], lambda: self._messages(conn, row))

    def _messages(self, conn: sqlite3.Connection, row: _Row) -> list[Message]:
        """A row's whole history: its base chain in one recursive query, from the nearest cached row."""
        return history(
            self._cache, row[0], row[1], row[4] is not None, row[6], lambda: conn.execute(_CHAIN, (row[0],))
        )

    # -- connections --------------------------------------------------------------
    async def _run(self, fn: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(fn)

    @contextmanager
    def _tx(self, mode: str) -> Iterator[sqlite3.Connection]:
        conn = self._acquire()
        try:
            conn.execute(f"BEGIN {mode}")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            self._release(conn)

    def _acquire(self) -> sqlite3.Connection:
        with self._pool_lock:
            if self._pid != os.getpid():
                # a forked child must not use its parent's connections (or trust its cache)
                self._pid, self._pool, self._ready = os.getpid(), [], False
                self._cache = MessageCache()
            if self._pool:
                return self._pool.pop()
        return self._connect()

    def _release(self, conn: sqlite3.Connection) -> None:
        if not conn.in_transaction:
            with self._pool_lock:
                if len(self._pool) < _POOL_MAX:
                    self._pool.append(conn)
                    return
        conn.close()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout = 30000")
            if not self._ready:
                self._init_schema(conn)
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        for attempt in range(50):
            try:
                # switching to WAL takes an exclusive lock; another process may hold it
                conn.execute("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError:
                if attempt == 49:
                    raise
                time.sleep(0.05)
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > _SCHEMA_VERSION:
                raise FailedPreconditionError(
                    f"{self.path} has schema version {version}; this nb_agents reads up to {_SCHEMA_VERSION}."
                )
            for stmt in _SCHEMA:
                conn.execute(stmt)
            conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        self._ready = True
