"""The tables of `PostgresSessionStore` and every query on them.

`PgRows` is the store's `StoreTransaction`: the primitives, inside a
transaction that the store opened on one pooled connection; it never commits.
Histories use the delta encoding of `._delta` (shared with the SQLite store):
a row keeps only the messages its turn added on top of its base row, and a
read rebuilds the history with one recursive query over the base chain.

Locking is the database's. `load` locks the id (a transaction-level advisory
lock, which also covers a row not written yet) and the row (``SELECT ... FOR
UPDATE``), so two saves of one row serialize. The base row a write encodes
against is locked ``FOR SHARE SKIP LOCKED``: a base being rewritten right now
is skipped (the turn is stored whole) rather than waited for, so saves cannot
deadlock on each other's bases, and a rewrite of a base waits for the rows
built on it. A claim is ``INSERT ... ON CONFLICT DO NOTHING``: when it finds
that another transaction committed a claim since `find_claim` looked,
`ClaimRacedError` rolls the transaction back (its pending row with it) for
the store to run it again. A fenced save holds the claim it checks
(``FOR SHARE``) and a replacement locks it (``FOR UPDATE``) before any row,
so a replacement waits for the fenced saves in flight, and the saves that
come after it see the new generation.

A session's agent and owner live in ``nb_agents_sessions``, once: the first
row that names them sets them, every row of the session reads them back.
A write that aborts a pending row's run (its status goes from ``pending`` to
``aborting`` or ``aborted``) sends ``NOTIFY nb_agents_changes`` with its id
(the empty payload, "anything changed", for an id too long for a payload) in
its transaction, for the `wait_changed` of every process (`._pg_listen`).
Nothing else does: a notifying transaction takes a server-wide lock at
commit (on a loaded machine three notices a cycle cost more than the rest of
its commits together), and every listening process reads each notice in a
transaction of its own; a running turn waits on its own row for an abort
only (its final write is its own).

The tables themselves, and their migrations, are in `._pg_schema`.

psycopg is imported by `postgres.py` first; ``import nb_agents`` never loads this.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from ..errors import AbortedError, FailedPreconditionError
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
from ._pg_lend import Copy
from .base import AuditRecord, ResumeClaim

__all__ = [
    "BY_ID",
    "CHAIN",
    "CHANNEL",
    "LEAVES",
    "Row",
    "copy_of",
    "decode_read",
    "decode_row",
    "needs_chain",
    "row_history",
    "aborts_a_run",
    "ClaimRacedError",
    "PgRows",
    "notify_payload",
]

CHANNEL = "nb_agents_changes"
_MAX_PAYLOAD = 7999  # bytes: NOTIFY's limit is 8000
_ID_LOCKS = 0x6E626964  # first key of pg_advisory_xact_lock(int, int) for one snapshot id: b"nbid"
_READ_ATTEMPTS = 3  # outside a transaction; then in one
BY_ID = """SELECT s.seq, s.rev, s.meta, s.state, s.base_seq, s.base_len, s.tail, ss.agent, ss.owner
    FROM nb_agents_snapshots s LEFT JOIN nb_agents_sessions ss ON ss.session_id = s.session_id
    WHERE s.snapshot_id = %s"""
_CLAIM = "SELECT digest, child_id, generation FROM nb_agents_claims WHERE snapshot_id = %s"
_SESSION = "SELECT agent, owner FROM nb_agents_sessions WHERE session_id = %s"
_ADD_SESSION = """INSERT INTO nb_agents_sessions AS ss (session_id, agent, owner) VALUES (%s, %s, %s)
    ON CONFLICT (session_id) DO UPDATE
        SET agent = coalesce(ss.agent, EXCLUDED.agent), owner = coalesce(ss.owner, EXCLUDED.owner)
        WHERE (ss.agent IS NULL AND EXCLUDED.agent IS NOT NULL)
            OR (ss.owner IS NULL AND EXCLUDED.owner IS NOT NULL)
    RETURNING agent, owner"""
LEAVES = """SELECT s.created_at, s.snapshot_id FROM nb_agents_snapshots s WHERE s.session_id = %(sid)s
    AND NOT EXISTS (
        SELECT 1 FROM nb_agents_snapshots c WHERE c.parent_id = s.snapshot_id AND c.session_id = %(sid)s)"""
CHAIN = """WITH RECURSIVE chain(depth, seq, rev, base_seq, base_len, tail) AS (
        SELECT 0, seq, rev, base_seq, base_len, tail FROM nb_agents_snapshots WHERE seq = %s
        UNION ALL
        SELECT c.depth + 1, s.seq, s.rev, s.base_seq, s.base_len, s.tail
        FROM nb_agents_snapshots s JOIN chain c ON s.seq = c.base_seq)
    SELECT seq, rev, base_len, tail FROM chain ORDER BY depth"""
_SESSIONS = """SELECT session_id FROM nb_agents_snapshots WHERE session_id IS NOT NULL
    GROUP BY session_id ORDER BY MIN(seq)"""
_RULES = "SELECT rules FROM nb_agents_rules WHERE session_id = %s"
_NO_RULES = "INSERT INTO nb_agents_rules (session_id, rules) VALUES (%s, '[]') ON CONFLICT DO NOTHING"
_SET_RULES = """INSERT INTO nb_agents_rules (session_id, rules) VALUES (%s, %s)
    ON CONFLICT (session_id) DO UPDATE SET rules = EXCLUDED.rules"""
_ADD_AUDIT = "INSERT INTO nb_agents_audit (session_id, record) VALUES (%s, %s)"

# (seq, rev, meta, state, base_seq, base_len, tail, the session's agent, its owner)
Row = tuple[int, int, str, str | None, int | None, int, str | None, str | None, str | None]


def aborts_a_run(current: SessionSnapshot | None, new: SessionSnapshot) -> bool:
    """Whether writing `new` over `current` aborts a pending row's run.

    Only these writes notify: a running turn waits on its own row for exactly
    this (another process's abort); heartbeats, new rows and a turn's own final
    write are silent, since a transaction that sends ``NOTIFY`` takes a
    server-wide lock at commit, and each listener reads it in a transaction.
    """
    return current is not None and current.status == "pending" and new.status in ("aborting", "aborted")


def notify_payload(snapshot_id: str) -> str:
    """The NOTIFY payload of a write of `snapshot_id`: the id, or "" when too long to be one."""
    return snapshot_id if len(snapshot_id.encode("utf-8", "surrogatepass")) <= _MAX_PAYLOAD else ""


class ClaimRacedError(FailedPreconditionError):
    """Another transaction committed a claim on the snapshot after `find_claim` looked: run again."""


class PgRows:
    """The primitives of one transaction (`StoreTransaction`).

    Args:
        conn: A connection inside a transaction.
        cache: The store's histories by ``(seq, rev)``; read here. What this
            transaction writes is in `written`, for the store to cache once
            the transaction committed.
    """

    def __init__(self, conn: psycopg.Connection[Any], cache: MessageCache) -> None:
        self.conn = conn
        self.cache = cache
        self.written: list[tuple[int, int, list[Message]]] = []
        # (id, seq, rev, the row as read or written, its columns as read): what the store
        # remembers once this is over
        self.seen: list[tuple[str, int, int, SessionSnapshot, Copy | None]] = []
        self._loaded: dict[str, Row | None] = {}  # the rows `load` locked, for `write`

    # -- reads ------------------------------------------------------------------------
    def get(self, snapshot_id: str) -> SessionSnapshot | None:
        """The row; outside a transaction too (autocommit): a row whose history takes a
        second query is read again when it changed in between, so both are of one version."""
        for _ in range(_READ_ATTEMPTS):
            row: Row | None = self.conn.execute(BY_ID, (snapshot_id,)).fetchone()
            if row is None:
                return None
            try:
                snap = self._decode(row)
            except _RowChangedError:
                continue
            self.seen.append((snapshot_id, row[0], row[1], snap, copy_of(row)))
            return snap
        with self.conn.transaction():  # rewritten at every look: read it in one snapshot
            self.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", prepare=False)
            return self.get(snapshot_id)

    def load(self, snapshot_id: str) -> SessionSnapshot | None:
        # the id's lock covers a row that does not exist yet: two first saves serialize
        self.conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_ID_LOCKS, snapshot_id))
        row: Row | None = self.conn.execute(BY_ID + " FOR UPDATE OF s", (snapshot_id,)).fetchone()
        self._loaded[snapshot_id] = row
        return self._decode(row) if row is not None else None

    def leaves(self, session_id: str) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self.conn.execute(LEAVES, {"sid": session_id})]

    def session_ids(self) -> list[str]:
        return [r[0] for r in self.conn.execute(_SESSIONS)]

    def find_claim(self, snapshot_id: str) -> ResumeClaim | None:
        row = self.conn.execute(_CLAIM, (snapshot_id,)).fetchone()
        return ResumeClaim(row[0], row[1], row[2]) if row is not None else None

    def hold_claim(self, snapshot_id: str, *, exclusive: bool) -> ResumeClaim | None:
        lock = " FOR UPDATE" if exclusive else " FOR SHARE"
        row = self.conn.execute(_CLAIM + lock, (snapshot_id,)).fetchone()
        return ResumeClaim(row[0], row[1], row[2]) if row is not None else None

    def audit(self, session_id: str) -> list[AuditRecord]:
        sql = "SELECT record FROM nb_agents_audit WHERE session_id = %s ORDER BY seq"
        return [decode_audit(text) for (text,) in self.conn.execute(sql, (session_id,))]

    # -- writes -----------------------------------------------------------------------
    def write(
        self, snapshot_id: str, current: SessionSnapshot | None, new: SessionSnapshot
    ) -> SessionSnapshot:
        row = self._loaded.pop(snapshot_id)
        old = list(current.state.messages) if current is not None and current.state is not None else []
        in_session = new.session_id is not None
        cols, messages = encode_row(
            new, lambda: self._base(new.parent_id, row[0] if row is not None else None), in_session=in_session
        )
        if row is None:
            inserted = self.conn.execute(
                "INSERT INTO nb_agents_snapshots (snapshot_id, session_id, parent_id, created_at, meta, "
                "state, base_seq, base_len, tail, rev) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, 1) "
                "RETURNING seq",
                (snapshot_id, *cols),
            ).fetchone()
            assert inserted is not None
            seq, rev = int(inserted[0]), 1
        else:
            seq, rev = row[0], row[1] + 1
            update = (
                "UPDATE nb_agents_snapshots SET session_id = %s, parent_id = %s, created_at = %s, meta = %s, "
                "state = %s, base_seq = %s, base_len = %s, tail = %s, rev = %s WHERE seq = %s"
            )
            if aborts_a_run(current, new):
                self.conn.execute(
                    update + f" RETURNING pg_notify('{CHANNEL}', %s)",
                    (*cols, rev, seq, notify_payload(snapshot_id)),
                )
            else:
                self.conn.execute(update, (*cols, rev, seq))
            if old:
                self._rebase_dependents(seq, old, shared_prefix(messages or [], old))
        if messages is not None:
            self.written.append((seq, rev, messages))
        written = self._with_session(new, row, current)
        self.seen.append((snapshot_id, seq, rev, written, None))
        return written

    def _with_session(
        self, new: SessionSnapshot, row: Row | None, current: SessionSnapshot | None
    ) -> SessionSnapshot:
        if new.session_id is None:
            return new
        # the session's agent and owner: as the loaded row read them, unless this row sets one
        if row is not None and current is not None and current.session_id == new.session_id:
            agent, owner = row[7], row[8]
            if (agent is None and new.agent is not None) or (owner is None and new.owner is not None):
                agent, owner = self._session(new.session_id, new.agent, new.owner)
        else:
            agent, owner = self._session(new.session_id, new.agent, new.owner)
        if (agent is not None and new.agent != agent) or (owner is not None and new.owner != owner):
            return new.model_copy(update={"agent": agent or new.agent, "owner": owner or new.owner})
        return new

    def _session(
        self, session_id: str, agent: str | None, owner: str | None
    ) -> tuple[str | None, str | None]:
        """The session's agent and owner, set from this row's where the session has none."""
        if agent is None and owner is None:
            found = self.conn.execute(_SESSION, (session_id,)).fetchone()
            return (found[0], found[1]) if found is not None else (None, None)
        found = self.conn.execute(_ADD_SESSION, (session_id, agent, owner)).fetchone()
        if found is None:  # the session names both already (or as this row does)
            found = self.conn.execute(_SESSION, (session_id,)).fetchone()
        assert found is not None
        return found[0], found[1]

    def add_claim(self, snapshot_id: str, claim: ResumeClaim) -> None:
        won = self.conn.execute(
            "INSERT INTO nb_agents_claims (snapshot_id, digest, child_id, generation) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (snapshot_id) DO NOTHING RETURNING 1",
            (snapshot_id, claim.digest, claim.child_id, claim.generation),
        ).fetchone()
        if won is None:
            raise ClaimRacedError(snapshot_id)

    def swap_claim(self, snapshot_id: str, old: ResumeClaim, new: ResumeClaim) -> None:
        self.conn.execute(  # `old` is held FOR UPDATE by this transaction: it is still there
            "UPDATE nb_agents_claims SET digest = %s, child_id = %s, generation = %s WHERE snapshot_id = %s",
            (new.digest, new.child_id, new.generation, snapshot_id),
        )

    def drop_claim(self, snapshot_id: str, claim: ResumeClaim) -> None:
        self.conn.execute(
            "DELETE FROM nb_agents_claims WHERE snapshot_id = %s AND digest = %s AND child_id = %s",
            (snapshot_id, claim.digest, claim.child_id),
        )

    def add_audit(self, records: Sequence[AuditRecord]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(_ADD_AUDIT, [(r.session_id, to_json(r.to_dict())) for r in records])

    # -- rules ------------------------------------------------------------------------
    def rules(self, session_id: str) -> list[dict[str, Any]]:
        found = self.conn.execute(_RULES, (session_id,)).fetchone()
        return list(json.loads(found[0])) if found is not None else []

    def load_rules(self, session_id: str) -> list[dict[str, Any]]:
        # the row is made if missing, so that there is a row to lock: a revoke and a
        # save adding a rule to the same session then serialize instead of losing one
        self.conn.execute(_NO_RULES, (session_id,))
        found = self.conn.execute(_RULES + " FOR UPDATE", (session_id,)).fetchone()
        return list(json.loads(found[0])) if found is not None else []

    def set_rules(self, session_id: str, rules: list[dict[str, Any]]) -> None:
        if rules:
            self.conn.execute(_SET_RULES, (session_id, to_json(rules)))
        else:
            self.conn.execute("DELETE FROM nb_agents_rules WHERE session_id = %s", (session_id,))

    # -- histories --------------------------------------------------------------------
    def _base(self, parent_id: str | None, own_seq: int | None) -> tuple[int, list[Message]] | None:
        """The row to delta-encode against (the parent) and its messages, if usable.

        Locked FOR SHARE until commit, so a rewrite of it waits and then sees
        this row among its dependents; skipped when a writer holds it now.
        """
        if not parent_id:
            return None
        row: Row | None = self.conn.execute(BY_ID + " FOR SHARE OF s SKIP LOCKED", (parent_id,)).fetchone()
        if row is None or row[3] is None or (own_seq is not None and row[0] >= own_seq):
            return None
        return row[0], self._messages(row)

    def _rebase_dependents(self, seq: int, old: list[Message], keep: int) -> None:
        """A rewritten row kept only `keep` of its old messages: rows built on more get them inline."""
        deps = self.conn.execute(
            "SELECT seq, base_len, tail FROM nb_agents_snapshots WHERE base_seq = %s AND base_len > %s "
            "ORDER BY seq FOR UPDATE",
            (seq, keep),
        ).fetchall()
        for dep_seq, dep_len, dep_tail in deps:
            self.conn.execute(
                "UPDATE nb_agents_snapshots SET base_seq = %s, base_len = %s, tail = %s WHERE seq = %s",
                (seq if keep else None, keep, rebased_tail(old, keep, dep_len, dep_tail), dep_seq),
            )

    def _decode(self, row: Row) -> SessionSnapshot:
        return decode_row(row, self.cache, self._chain)

    def _messages(self, row: Row) -> list[Message]:
        return row_history(row, self.cache, self._chain)

    def _chain(self, seq: int) -> list[Any]:
        return self.conn.execute(CHAIN, (seq,)).fetchall()


def decode_row(row: Row, cache: MessageCache, chain: Callable[[int], list[Any]]) -> SessionSnapshot:
    """The snapshot of a row read with `BY_ID` (its history: `row_history`)."""
    return decode_snapshot(row[2], row[3], row[6], lambda: row_history(row, cache, chain), row[7], row[8])


def decode_read(row: Row, cache: MessageCache, chain: Callable[[int], list[Any]]) -> SessionSnapshot | None:
    """`decode_row`, or None when the row was written between its statement and its chain's."""
    try:
        return decode_row(row, cache, chain)
    except _RowChangedError:
        return None


def row_history(row: Row, cache: MessageCache, chain: Callable[[int], list[Any]]) -> list[Message]:
    """A row's whole history, from the nearest cached link of its base chain, which ``chain(seq)``
    reads (`CHAIN`, one recursive query) when `needs_chain`.

    Raises `_RowChangedError` (internal) when the chain starts at another revision of the row
    than `row` (outside a transaction, a write came in between).
    """

    def links() -> list[Any]:
        got = chain(row[0])
        if not got or (got[0][0], got[0][1]) != (row[0], row[1]):
            raise _RowChangedError(row[0])
        return got

    return history(cache, row[0], row[1], row[4] is not None, row[6], links)


def needs_chain(row: Row, cache: MessageCache) -> bool:
    """Whether decoding `row` reads its base chain: a history built on a base, not cached here."""
    return (
        row[3] is not None and row[6] is not None and row[4] is not None and cache.get(row[0], row[1]) is None
    )


def copy_of(row: Row) -> Copy:
    """What a row read with `BY_ID` is, for lending it to an answer (`._pg_lend`)."""
    return Copy(row[2], row[3], row[6], row[4] is not None, row[7], row[8])


class _RowChangedError(AbortedError):
    """The row was written between reading it and reading its history: read it again (internal)."""

    def __init__(self, seq: int) -> None:
        super().__init__(f"row {seq} was written while it was read; read it again")
