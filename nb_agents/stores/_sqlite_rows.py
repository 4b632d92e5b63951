"""The queries of `SqliteSessionStore` on its tables (`._sqlite_schema`).

`Rows` is the store's `StoreTransaction`: the primitives, inside a transaction
that the store opened on one connection; it never commits, and keeps what it
read and wrote (`Rows.seen`, `Rows.written`) for the store to remember once
the transaction committed (`._sqlite_fast.Fast`). A row's agent and
owner are its session's (a row without a session keeps them in its
``meta``): the first row that names them sets them, and a row saved with
others reads back with the session's.

Values are `._sqlite_codec`'s compact forms. A reference to a snapshot
(``parent``, a claim's or an audit record's ``snap`` and ``child``) is the
named row's ``seq`` when that row exists, else its encoded id; a row inserted
later adopts the rows that named it by id. ``leaf`` is 1 when the row has a
session and no row of that session names it as parent, so a small partial
index finds a session's leaves. A row whose ``base_len`` is
set holds only the messages its turn added (``tail``) on top of the first
``base_len`` of its parent's (the delta encoding of `._delta`); a parent is
a base only when it is older (smaller ``seq``), so a chain cannot loop.

SQLite compares a typed-less column with an INTEGER one numerically (the text
``'5'`` would equal 5), so the queries test ``typeof`` or strip the affinity
with a unary ``+`` wherever a reference meets a ``seq``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from ..types import Message, SessionSnapshot
from ._delta import Histories, detached, history, shared_prefix, to_json
from ._sqlite_codec import (
    Id,
    Ref,
    decode_digest,
    decode_id,
    decode_time,
    encode_digest,
    encode_id,
    pack_audit,
    pack_row,
    pack_tail,
    ref_id,
    unpack_audit,
    unpack_row,
    unpack_tail,
)
from .base import AuditRecord, ResumeClaim

__all__ = ["BY_ID", "RELEAF", "Rows", "Seen"]

# A row as read: the stored columns, then the parent's and the session's ids, the session's agent and owner.
_SELECT = """SELECT s.seq, s.rev, s.base_len, s.tail, s.state, s.created, s.kind, s.meta, s.id,
        s.session, s.parent, p.id, ss.id, ss.agent, ss.owner
    FROM snapshots s
    LEFT JOIN snapshots p ON typeof(s.parent) = 'integer' AND p.seq = s.parent
    LEFT JOIN sessions ss ON ss.key = s.session"""
BY_ID = _SELECT + " WHERE s.id = ?"
_RULES = "SELECT r.rules FROM rules r JOIN sessions ss ON ss.key = r.session WHERE ss.id = ?"
_PARENT_ROW = "SELECT seq, rev, base_len, tail, state IS NOT NULL FROM snapshots WHERE id = ?"
_CHAIN = """WITH RECURSIVE chain(depth, seq, rev, parent, base_len, tail) AS (
        SELECT 0, seq, rev, parent, base_len, tail FROM snapshots WHERE seq = ?
        UNION ALL
        SELECT c.depth + 1, s.seq, s.rev, s.parent, s.base_len, s.tail
        FROM chain c JOIN snapshots s ON s.seq = c.parent
        WHERE c.base_len IS NOT NULL AND typeof(c.parent) = 'integer')
    SELECT seq, rev, coalesce(base_len, 0), tail FROM chain ORDER BY depth"""
RELEAF = """UPDATE snapshots SET leaf = (session IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM snapshots c WHERE c.parent = +snapshots.seq AND c.session = snapshots.session))
    WHERE seq = ?"""
_INSERT = """INSERT INTO snapshots
    (id, session, parent, leaf, rev, created, kind, meta, state, base_len, tail)
    VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)"""
_UPDATE = """UPDATE snapshots SET session = ?, parent = ?, rev = ?, created = ?, kind = ?, meta = ?,
    state = ?, base_len = ?, tail = ? WHERE seq = ?"""
_AUDIT = """SELECT a.record, a.snap, s.id, a.child, c.id FROM audit a
    LEFT JOIN snapshots s ON typeof(a.snap) = 'integer' AND s.seq = a.snap
    LEFT JOIN snapshots c ON typeof(a.child) = 'integer' AND c.seq = a.child
    WHERE a.session = ? ORDER BY a.n"""

# A row a transaction read or wrote, as it reads back: (id, seq, rev, session id, session key,
# the session's agent and owner (None, None without a session), the snapshot (the transaction's own copy)).
Seen = tuple[str, int, int, str | None, int | None, str | None, str | None, SessionSnapshot]

# Indexes into a row as `_SELECT` reads it (the layout `unpack_row` reads).
_SEQ, _REV, _BASE_LEN, _TAIL, _STATE, _ID, _SESSION, _PARENT, _AGENT, _OWNER = 0, 1, 2, 3, 4, 8, 9, 10, 13, 14


class Rows:
    """The primitives of one transaction (`StoreTransaction`).

    Args:
        conn: A connection inside a transaction (``BEGIN IMMEDIATE`` for writes).
        cache: The store's histories by ``(seq, rev)``; read here, and filled
            with what this transaction reads. What it writes is in `written`,
            for the store to cache once the transaction committed.
    """

    def __init__(self, conn: sqlite3.Connection, cache: Histories) -> None:
        self.conn = conn
        self.cache = cache
        self.written: list[tuple[int, int, list[Message]]] = []
        self.seen: list[Seen] = []  # for the store to remember, once the transaction committed
        self._loaded: dict[str, Any] = {}  # the rows `load` read, for `write`
        # references this transaction resolved or wrote: a save's audit records and
        # a claim's child name the row just written without another query
        self._known: dict[str, Ref] = {}
        self._sessions: dict[str, int] = {}
        self._owners: dict[int, tuple[str | None, str | None]] = {}  # session key -> (agent, owner)

    # -- reads ------------------------------------------------------------------------
    def get(self, snapshot_id: str) -> SessionSnapshot | None:
        row = self.conn.execute(BY_ID, (encode_id(snapshot_id),)).fetchone()
        return self._decode(row) if row is not None else None

    def load(self, snapshot_id: str) -> SessionSnapshot | None:
        row = self.conn.execute(BY_ID, (encode_id(snapshot_id),)).fetchone()
        self._loaded[snapshot_id] = row
        return self._decode(row) if row is not None else None

    def leaves(self, session_id: str) -> list[tuple[str, str]]:
        key = self._session_key(session_id)
        if key is None:
            return []
        rows = self.conn.execute("SELECT created, id FROM snapshots WHERE session = ? AND leaf = 1", (key,))
        return [(decode_time(created) or "", decode_id(snapshot_id)) for created, snapshot_id in rows]

    def session_ids(self) -> list[str]:
        rows = self.conn.execute("SELECT id FROM sessions WHERE first IS NOT NULL ORDER BY first")
        return [decode_id(r[0]) for r in rows]

    def audit(self, session_id: str) -> list[AuditRecord]:
        key = self._session_key(session_id)
        if key is None:
            return []
        return [
            unpack_audit(record, session_id, ref_id(snap, snap_id), ref_id(child, child_id))
            for record, snap, snap_id, child, child_id in self.conn.execute(_AUDIT, (key,))
        ]

    def find_claim(self, snapshot_id: str) -> ResumeClaim | None:
        refs = self._refs(snapshot_id)
        marks = ", ".join("?" * len(refs))
        won = self.conn.execute(
            f"SELECT digest, child, generation FROM claims WHERE snap IN ({marks})", refs
        ).fetchone()
        return ResumeClaim(decode_digest(won[0]), self._id_of(won[1]), won[2]) if won is not None else None

    def hold_claim(self, snapshot_id: str, *, exclusive: bool) -> ResumeClaim | None:
        return self.find_claim(snapshot_id)  # a write transaction (BEGIN IMMEDIATE) excludes other writers

    # -- writes -----------------------------------------------------------------------
    def write(
        self, snapshot_id: str, current: SessionSnapshot | None, new: SessionSnapshot
    ) -> SessionSnapshot:
        old = list(current.state.messages) if current is not None and current.state is not None else []
        key = encode_id(snapshot_id)
        seq, rev, session, parent = self._write(key, self._loaded.pop(snapshot_id), old, new)
        self._known[snapshot_id] = seq
        if new.parent_id is not None and parent is not None:
            self._known[new.parent_id] = parent
        if session is None:
            self.seen.append((snapshot_id, seq, rev, None, None, None, None, detached(new)))
            return new
        if new.session_id is not None:
            self._sessions[new.session_id] = session
        agent, owner = self._owners[session]
        if (agent is not None and new.agent != agent) or (owner is not None and new.owner != owner):
            new = new.model_copy(update={"agent": agent or new.agent, "owner": owner or new.owner})
        self.seen.append((snapshot_id, seq, rev, new.session_id, session, agent, owner, detached(new)))
        return new

    def add_claim(self, snapshot_id: str, claim: ResumeClaim) -> None:
        self.conn.execute(
            "INSERT INTO claims (snap, digest, child, generation) VALUES (?, ?, ?, ?)",
            (
                self._ref(snapshot_id),
                encode_digest(claim.digest),
                self._ref(claim.child_id),
                claim.generation,
            ),
        )

    def swap_claim(self, snapshot_id: str, old: ResumeClaim, new: ResumeClaim) -> None:
        snaps = self._refs(snapshot_id)
        marks = ", ".join("?" * len(snaps))
        self.conn.execute(
            f"UPDATE claims SET digest = ?, child = ?, generation = ? WHERE snap IN ({marks})",
            (encode_digest(new.digest), self._ref(new.child_id), new.generation, *snaps),
        )

    def drop_claim(self, snapshot_id: str, claim: ResumeClaim) -> None:
        snaps, children = self._refs(snapshot_id), self._refs(claim.child_id)
        self.conn.execute(
            f"DELETE FROM claims WHERE snap IN ({', '.join('?' * len(snaps))}) "
            f"AND child IN ({', '.join('?' * len(children))})",
            (*snaps, *children),
        )

    def add_audit(self, records: Sequence[AuditRecord]) -> None:
        for rec in records:
            session = self._sessions.get(rec.session_id)
            if session is None:
                session = self._sessions[rec.session_id] = self._intern(rec.session_id)[0]
            n = self.conn.execute("SELECT coalesce(max(n), 0) + 1 FROM audit WHERE session = ?", (session,))
            self.conn.execute(
                "INSERT INTO audit (session, n, snap, child, record) VALUES (?, ?, ?, ?, ?)",
                (
                    session,
                    n.fetchone()[0],
                    self._ref(rec.snapshot_id),
                    self._ref(rec.child_id),
                    pack_audit(rec),
                ),
            )

    # -- rules ------------------------------------------------------------------------
    def rules(self, session_id: str) -> list[dict[str, Any]]:
        found = self.conn.execute(_RULES, (encode_id(session_id),)).fetchone()
        return list(json.loads(found[0])) if found is not None else []

    load_rules = rules  # a write transaction (BEGIN IMMEDIATE) excludes other writers

    def set_rules(self, session_id: str, rules: list[dict[str, Any]]) -> None:
        session = self._sessions.get(session_id) or self._session_key(session_id)
        if session is None:
            if not rules:
                return
            session = self._sessions[session_id] = self._intern(session_id)[0]
        if rules:
            self.conn.execute(
                "INSERT INTO rules (session, rules) VALUES (?, ?) "
                "ON CONFLICT (session) DO UPDATE SET rules = excluded.rules",
                (session, to_json(rules)),
            )
        else:
            self.conn.execute("DELETE FROM rules WHERE session = ?", (session,))

    # -- one row ----------------------------------------------------------------------
    def _write(
        self, key: Id, row: Any, old: list[Message], new: SessionSnapshot
    ) -> tuple[int, int, int | None, Ref | None]:
        """Insert or rewrite a row; returns its seq, rev, session key and parent reference."""
        conn = self.conn
        session, first = (
            self._intern(new.session_id, new.agent, new.owner) if new.session_id is not None else (None, None)
        )
        parent: Ref | None = None
        base_row = None
        if new.parent_id is not None:
            parent = encode_id(new.parent_id)
            base_row = conn.execute(_PARENT_ROW, (parent,)).fetchone()
            if base_row is not None:
                parent = base_row[_SEQ]
        base = None
        # the parent is a base when it is older and has a state (and the row has messages)
        usable = base_row is not None and base_row[4] and (row is None or base_row[_SEQ] < row[_SEQ])
        if usable and new.state is not None and "messages" in new.state.model_fields_set:
            base = self._messages(base_row)
        values, messages = pack_row(new, base, in_session=session is not None)
        if row is None:
            seq = conn.execute(_INSERT, (key, session, parent, int(session is not None), *values)).lastrowid
            assert seq is not None
            rev = 1
            if conn.execute("UPDATE snapshots SET parent = ? WHERE parent = ?", (seq, key)).rowcount:
                conn.execute(RELEAF, (seq,))  # rows written before this one named it: adopted
            moved = True
        else:
            seq, rev = row[_SEQ], row[_REV] + 1
            conn.execute(_UPDATE, (session, parent, rev, *values, seq))
            if session != row[_SESSION]:
                conn.execute(RELEAF, (seq,))
            moved = session != row[_SESSION] or parent != row[_PARENT]
            if moved and isinstance(row[_PARENT], int):
                conn.execute(RELEAF, (row[_PARENT],))
            if old:
                self._rebase_dependents(seq, old, shared_prefix(messages or [], old))
        if moved and isinstance(parent, int) and session is not None:
            conn.execute(
                "UPDATE snapshots SET leaf = 0 WHERE seq = ? AND session = ? AND leaf = 1", (parent, session)
            )
        if session is not None and (first is None or seq < first):
            conn.execute("UPDATE sessions SET first = ? WHERE key = ?", (seq, session))
        if messages is not None:
            self.written.append((seq, rev, messages))
        return seq, rev, session, parent

    def _rebase_dependents(self, seq: int, old: list[Message], keep: int) -> None:
        """A rewritten row kept only `keep` of its old messages: rows built on more get them inline."""
        deps = self.conn.execute(
            "SELECT seq, base_len, tail FROM snapshots WHERE parent = ? AND base_len > ?", (seq, keep)
        ).fetchall()
        for dep_seq, dep_len, dep_tail in deps:
            tail = pack_tail(old[keep:dep_len] + unpack_tail(dep_tail))
            self.conn.execute(
                "UPDATE snapshots SET base_len = ?, tail = ? WHERE seq = ?", (keep or None, tail, dep_seq)
            )

    def _decode(self, row: Any) -> SessionSnapshot:
        """The row as a snapshot; what was read is kept in `seen` (a copy: the caller may change its own)."""
        snap = unpack_row(row, lambda: self._messages(row))
        session_id, key = snap.session_id if row[_SESSION] is not None else None, row[_SESSION]
        self.seen.append(
            (
                decode_id(row[_ID]),
                row[_SEQ],
                row[_REV],
                session_id,
                key,
                row[_AGENT],
                row[_OWNER],
                detached(snap),
            )
        )
        return snap

    def _messages(self, row: Any) -> list[Message]:
        """A row's whole history: its base chain in one recursive query, from the nearest cached row."""
        seq = row[_SEQ]
        return history(
            self.cache,
            seq,
            row[_REV],
            row[_BASE_LEN] is not None,
            row[_TAIL],
            lambda: self.conn.execute(_CHAIN, (seq,)),
            unpack_tail,
        )

    # -- references -------------------------------------------------------------------
    def _refs(self, snapshot_id: str) -> tuple[Ref, ...]:
        """How a snapshot can be referenced: ``(seq, id)`` when it has a row, else ``(id,)``."""
        key = encode_id(snapshot_id)
        found = self.conn.execute("SELECT seq FROM snapshots WHERE id = ?", (key,)).fetchone()
        return (found[0], key) if found is not None else (key,)

    def _ref(self, snapshot_id: str) -> Ref:
        """How a new reference names the snapshot: its seq when it has a row, else its id."""
        ref = self._known.get(snapshot_id)
        return ref if ref is not None else self._refs(snapshot_id)[0]

    def _id_of(self, ref: Ref) -> str:
        if isinstance(ref, int):
            found = self.conn.execute("SELECT id FROM snapshots WHERE seq = ?", (ref,)).fetchone()
            return decode_id(found[0])
        return decode_id(ref)

    def _session_key(self, session_id: str) -> int | None:
        found = self.conn.execute(
            "SELECT key FROM sessions WHERE id = ?", (encode_id(session_id),)
        ).fetchone()
        return found[0] if found is not None else None

    def _intern(
        self, session_id: str, agent: str | None = None, owner: str | None = None
    ) -> tuple[int, int | None]:
        """The session's key (added if new) and the seq of its first snapshot.

        The session's agent and owner are set by the first row that names them
        (what it has is in `_owners`); a later row cannot change them.
        """
        encoded = encode_id(session_id)
        found = self.conn.execute(
            "SELECT key, first, agent, owner FROM sessions WHERE id = ?", (encoded,)
        ).fetchone()
        if found is None:
            key = self.conn.execute(
                "INSERT INTO sessions (id, agent, owner) VALUES (?, ?, ?)", (encoded, agent, owner)
            ).lastrowid
            assert key is not None
            self._owners[key] = (agent, owner)
            return key, None
        key, first, had_agent, had_owner = found
        if (had_agent is None and agent is not None) or (had_owner is None and owner is not None):
            self.conn.execute(
                "UPDATE sessions SET agent = coalesce(agent, ?), owner = coalesce(owner, ?) WHERE key = ?",
                (agent, owner, key),
            )
        self._owners[key] = (
            had_agent if had_agent is not None else agent,
            had_owner if had_owner is not None else owner,
        )
        return key, first
