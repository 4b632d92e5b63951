"""Known-row reads and writes of `SqliteSessionStore`: a store call in one statement, or a few.

An approval cycle reads once and writes three times: the paused turn's new
row, the claim with its child's pending row, and the child's final row
(fenced, with its audit records). The general path (`._sqlite_rows` in a
transaction of `sqlite.py`) looks up every id, session and reference it
touches before it writes: ten or more statements a call. Here each call is
one statement, or a short transaction of two to four, because this process
already knows what the general path would look up (`Known`: the rows and
sessions it wrote or read, decoded), and each statement checks that what it
assumed still holds:

* a read is one ``SELECT`` (no transaction); a row this process knows at the
  revision read (and its session's agent and owner as read) is answered from
  what it knows, as a copy, without decoding;
* a save of an id this process has not seen runs the mutator on None and
  inserts ``ON CONFLICT DO NOTHING``, with its session (``INSERT ... ON
  CONFLICT DO UPDATE``) unless the session is known; a rows's ``seq`` (and a
  new session's ``first``) is the next one, chosen in the statement;
* a save of a known row without a history (a pending row) runs the mutator
  on a copy of it and updates the row only ``WHERE rev`` is still the known
  one: one statement, without ``BEGIN``, unless audit records go with it;
* a fenced save finds the claim it names in its statement, and a history is
  encoded against its parent (`._delta`'s rule) only when that is a row known
  here with a history, still at the revision known;
* a claim inserts its child's pending row and then itself ``WHERE NOT EXISTS``
  another claim, in one transaction.

Whatever does not hold (the row exists or was written meanwhile, the claim
moved, the base was rewritten, the row has a history, the mutator writes
nothing, an audit record of another session) writes nothing, and the store
takes the general path, which decides (and raises) as before. A mutator may
so run twice, the first time on a copy (`SessionStore.save_snapshot` allows
it). The rows written are the general path's, byte for byte; writers of this
process are serialized by the store's write lock, and ``BEGIN IMMEDIATE``
or a single statement serializes them with other processes.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final

from ..types import SessionSnapshot
from ._base import apply_mutator
from ._delta import MessageCache, detached, history
from ._sqlite_codec import encode_digest, encode_id, pack_audit, pack_row, unpack_tail
from ._sqlite_rows import BY_ID, RELEAF, Seen, decode_row
from .base import AuditRecord, Fence, ResumeClaim, SnapshotMutator

__all__ = ["SLOW", "Fast"]

SLOW: Final = "slow"  # the known-row path does not apply (or did not hold): take the general one
_KEEP = 512  # rows known
_KEEP_MESSAGES = 50_000  # message references held by them, shared ones counted per row
_KEEP_SESSIONS = 4096

# A known row: (seq, rev, session key, the session's agent and owner as read, the snapshot).
_Known = tuple[int, int, int | None, str | None, str | None, SessionSnapshot]

_SESSION = """INSERT INTO sessions (id, agent, owner, first)
    VALUES (?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM snapshots))
    ON CONFLICT (id) DO UPDATE SET agent = coalesce(agent, excluded.agent),
        owner = coalesce(owner, excluded.owner), first = coalesce(first, excluded.first)
    RETURNING key"""
_INSERT = """INSERT INTO snapshots
        (seq, id, session, parent, leaf, rev, created, kind, meta, state, base_len, tail)
    SELECT (SELECT coalesce(max(seq), 0) + 1 FROM snapshots), :id, :key,
        coalesce(:parent_seq, +(SELECT seq FROM snapshots WHERE id = :parent), :parent), :key IS NOT NULL, 1,
        :created, :kind, :meta, :state, :base_len, :tail
    WHERE {guard}
    ON CONFLICT (id) DO NOTHING
    RETURNING seq, EXISTS (SELECT 1 FROM snapshots c WHERE c.parent = :id),
        (SELECT agent FROM sessions WHERE key = :key), (SELECT owner FROM sessions WHERE key = :key)"""
_UPDATE = """UPDATE snapshots SET rev = rev + 1, created = :created, kind = :kind, meta = :meta,
        state = :state, base_len = :base_len, tail = :tail
    WHERE seq = :seq AND rev = :rev AND {guard}
    RETURNING (SELECT agent FROM sessions WHERE key = :key), (SELECT owner FROM sessions WHERE key = :key)"""
_FENCE = """EXISTS (SELECT 1 FROM claims
    WHERE snap IN (+(SELECT seq FROM snapshots WHERE id = :f_parent), :f_parent)
    AND child IN (+(SELECT seq FROM snapshots WHERE id = :f_child), :f_child) AND generation = :f_gen)"""
_BASE = "EXISTS (SELECT 1 FROM snapshots WHERE seq = :b_seq AND rev = :b_rev)"
_ADOPT = "UPDATE snapshots SET parent = ? WHERE parent = ?"
_UNLEAF = "UPDATE snapshots SET leaf = 0 WHERE id = ? AND session = ? AND leaf = 1"
_CLAIM = """INSERT INTO claims (snap, digest, child, generation)
    SELECT coalesce(+(SELECT seq FROM snapshots WHERE id = :snap), :snap), :digest,
        coalesce(+(SELECT seq FROM snapshots WHERE id = :child), :child), 1
    WHERE NOT EXISTS (
        SELECT 1 FROM claims WHERE snap IN (+(SELECT seq FROM snapshots WHERE id = :snap), :snap))"""
_AUDIT_ROW = """(?, (SELECT coalesce(max(n), 0) FROM audit WHERE session = ?) + {n},
    coalesce(+(SELECT seq FROM snapshots WHERE id = ?), ?),
    coalesce(+(SELECT seq FROM snapshots WHERE id = ?), ?), ?)"""
_GUARDS = {
    (f, b): " AND ".join(g for g, on in ((_FENCE, f), (_BASE, b)) if on) or "1"
    for f in (0, 1)
    for b in (0, 1)
}
_INSERTS = {k: _INSERT.format(guard=g) for k, g in _GUARDS.items()}
_UPDATES = {k: _UPDATE.format(guard=g) for k, g in _GUARDS.items()}


class Fast:
    """The known-row calls, each on a connection outside any transaction.

    Args:
        cache: The store's histories by ``(seq, rev)``: rows written here go in.
    """

    def __init__(self, cache: MessageCache) -> None:
        self.cache = cache
        self.rows: OrderedDict[str, _Known] = OrderedDict()
        # session id -> (key, agent, owner): a session's agent and owner, once set, never change
        self.sessions: OrderedDict[str, tuple[int, str | None, str | None]] = OrderedDict()
        self._messages = 0
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self.rows.clear()
            self.sessions.clear()
            self._messages = 0

    def remember(self, seen: Sequence[Seen]) -> None:
        """Keep what a committed transaction read or wrote (the general path's, or one of these)."""
        with self._lock:
            rows = self.rows
            for snapshot_id, seq, rev, session_id, key, agent, owner, snap in seen:
                had = rows.get(snapshot_id)
                if had is not None:
                    if (had[0], had[1]) > (seq, rev):
                        continue  # an older read finishing late
                    self._messages -= len(had[5].state.messages) if had[5].state is not None else 0
                rows[snapshot_id] = (seq, rev, key, agent, owner, snap)
                rows.move_to_end(snapshot_id)
                self._messages += len(snap.state.messages) if snap.state is not None else 0
                if session_id is not None and key is not None:
                    self.sessions[session_id] = (key, agent, owner)
                    self.sessions.move_to_end(session_id)
            while len(rows) > _KEEP or (self._messages > _KEEP_MESSAGES and len(rows) > 1):
                gone = rows.popitem(last=False)[1][5]
                self._messages -= len(gone.state.messages) if gone.state is not None else 0
            while len(self.sessions) > _KEEP_SESSIONS:
                self.sessions.popitem(last=False)

    # -- a read -----------------------------------------------------------------------
    def read(self, conn: sqlite3.Connection, snapshot_id: str) -> SessionSnapshot | str | None:
        """The row (a copy), or None, in one statement; `SLOW` when its history needs another."""
        row = conn.execute(BY_ID, (encode_id(snapshot_id),)).fetchone()
        if row is None:
            return None
        seq, rev, base_len, tail = row[0], row[1], row[2], row[3]
        known = self.rows.get(snapshot_id)
        if known is not None and known[:2] == (seq, rev) and known[3:5] == (row[13], row[14]):
            return detached(known[5])
        if base_len is not None and self.cache.get(seq, rev) is None:
            return SLOW  # its base chain takes a second query: in one transaction, the general path's
        snap = decode_row(row, lambda: history(self.cache, seq, rev, False, tail, list, unpack_tail))
        session_id = snap.session_id if row[9] is not None else None
        self.remember([(snapshot_id, seq, rev, session_id, row[9], row[13], row[14], detached(snap))])
        return snap

    # -- a save -----------------------------------------------------------------------
    def save(
        self,
        conn: sqlite3.Connection,
        snapshot_id: str,
        mutator: SnapshotMutator,
        audit: Sequence[AuditRecord],
        fence: Fence | None,
    ) -> SessionSnapshot | str:
        """Write the row: what was written, or `SLOW` (nothing written)."""
        known = self.rows.get(snapshot_id)
        if known is None:  # a row this process has not seen: a new one, or the general path's
            conn.execute("BEGIN IMMEDIATE")
            try:
                new = apply_mutator(snapshot_id, None, mutator)
                done = self._insert(conn, snapshot_id, new, fence) if new is not None else None
                if done is not None and audit and not self._audit(conn, done, audit):
                    done = None
                conn.execute("COMMIT" if done is not None else "ROLLBACK")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            if done is None:
                return SLOW
            self.remember([done])
            return done[7]
        seq, rev, key, agent, owner, snap = known
        if snap.state is not None:
            return SLOW  # a row with a history: rewriting it may move the rows built on it
        current = detached(snap)
        new = apply_mutator(snapshot_id, current, mutator)
        if (
            new is None
            or new.session_id != current.session_id
            or new.parent_id != current.parent_id
            or (key is not None and agent is None and new.agent is not None)
            or (key is not None and owner is None and new.owner is not None)
        ):
            return SLOW  # "write nothing", or a row that moves, decided on a copy: the general path decides
        base = self._base(new, seq)
        if isinstance(base, str):
            return SLOW
        (created, kind, meta, state, base_len, tail), messages = pack_row(
            new, base[2] if base else None, in_session=key is not None
        )
        params: dict[str, Any] = {
            "created": created, "kind": kind, "meta": meta, "state": state, "base_len": base_len,
            "tail": tail, "seq": seq, "rev": rev, "key": key,
        }  # fmt: skip
        if fence is not None:
            params.update(f_parent=encode_id(fence.parent_id), f_child=encode_id(fence.child_id))
            params["f_gen"] = fence.generation
        if base_len is not None:
            assert base is not None
            params.update(b_seq=base[0], b_rev=base[1])
        sql = _UPDATES[fence is not None, base_len is not None]
        if audit:
            conn.execute("BEGIN IMMEDIATE")
        try:
            got = conn.execute(sql, params).fetchall()
            written = (snapshot_id, seq, rev + 1, new.session_id, key, *got[0], new) if got else None
            if written is not None and audit and not self._audit(conn, written, audit):
                written = None
            if conn.in_transaction:
                conn.execute("COMMIT" if written is not None else "ROLLBACK")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if written is None:
            return SLOW
        out = _with_session(new, written[5], written[6])
        if messages is not None:
            self.cache.put(seq, rev + 1, messages)
        self.remember([(*written[:7], detached(out))])
        return out

    # -- a claim ----------------------------------------------------------------------
    def claim(
        self, conn: sqlite3.Connection, snapshot_id: str, claim: ResumeClaim, pending: SessionSnapshot | None
    ) -> bool | str:
        """Claim with the pending row in one transaction: True when this call won, else `SLOW`
        (the claim was taken, or the child's row exists: the general path reads what is there)."""
        if pending is not None and claim.child_id in self.rows:
            return SLOW
        params = {
            "snap": encode_id(snapshot_id),
            "digest": encode_digest(claim.digest),
            "child": encode_id(claim.child_id),
        }
        if pending is None:  # one statement
            return conn.execute(_CLAIM, params).rowcount == 1 or SLOW
        conn.execute("BEGIN IMMEDIATE")
        try:
            done = self._insert(
                conn, claim.child_id, apply_mutator(claim.child_id, None, lambda cur: pending)
            )
            won = done is not None and conn.execute(_CLAIM, params).rowcount == 1
            conn.execute("COMMIT" if won else "ROLLBACK")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if not won:
            return SLOW
        assert done is not None
        self.remember([done])
        return True

    # -- one row ----------------------------------------------------------------------
    def _insert(
        self,
        conn: sqlite3.Connection,
        snapshot_id: str,
        new: SessionSnapshot | None,
        fence: Fence | None = None,
    ) -> Seen | None:
        """Insert `new` as a row with its session's (the connection holds the write lock, in a
        transaction): what was written, or None when the row exists or a check did not hold."""
        if new is None or new.parent_id == snapshot_id:
            return None
        base = self._base(new, None)
        if isinstance(base, str):
            return None
        session_id, key = new.session_id, None
        if session_id is not None:
            session = self.sessions.get(session_id)
            if (
                session is None
                or (session[1] is None and new.agent is not None)
                or (session[2] is None and new.owner is not None)
            ):  # the session's row, with its agent and owner if it names none yet
                key = conn.execute(_SESSION, (encode_id(session_id), new.agent, new.owner)).fetchone()[0]
            else:
                key = session[0]
        parent = self.rows.get(new.parent_id) if new.parent_id is not None else None
        (created, kind, meta, state, base_len, tail), messages = pack_row(
            new, base[2] if base else None, in_session=key is not None
        )
        row_id = encode_id(snapshot_id)
        parent_id = encode_id(new.parent_id) if new.parent_id is not None else None
        params: dict[str, Any] = {
            "id": row_id, "key": key, "parent_seq": parent[0] if parent else None, "parent": parent_id,
            "created": created, "kind": kind, "meta": meta, "state": state, "base_len": base_len,
            "tail": tail,
        }  # fmt: skip
        if fence is not None:
            params.update(f_parent=encode_id(fence.parent_id), f_child=encode_id(fence.child_id))
            params["f_gen"] = fence.generation
        if base_len is not None:
            assert base is not None
            params.update(b_seq=base[0], b_rev=base[1])
        got = conn.execute(_INSERTS[fence is not None, base_len is not None], params).fetchall()
        if not got:
            return None
        seq, adopted, agent, owner = got[0]
        if adopted:  # rows written before this one named it: adopted, as the general path does
            conn.execute(_ADOPT, (seq, row_id))
            conn.execute(RELEAF, (seq,))
        if parent_id is not None and key is not None and (parent is None or parent[2] == key):
            conn.execute(_UNLEAF, (parent_id, key))
        if messages is not None:
            self.cache.put(seq, 1, messages)
        out = _with_session(new, agent, owner)
        return (snapshot_id, seq, 1, session_id, key, agent, owner, detached(out))

    def _base(self, new: SessionSnapshot, own_seq: int | None) -> tuple[int, int, list[Any]] | str | None:
        """The parent to encode `new`'s history against, as ``(seq, rev, messages)``: a known row
        with a history, older than `new`'s; None (no base), or `SLOW` (a parent not known here)."""
        state = new.state
        if state is None or new.parent_id is None or "messages" not in state.model_fields_set:
            return None
        parent = self.rows.get(new.parent_id)
        if parent is None:
            return SLOW
        if parent[5].state is None or (own_seq is not None and parent[0] >= own_seq):
            return None
        return parent[0], parent[1], parent[5].state.messages

    def _audit(self, conn: sqlite3.Connection, written: Seen, audit: Sequence[AuditRecord]) -> bool:
        """Append the records of a write of a row in their session, in its transaction (False:
        a record of another session, left to the general path)."""
        session_id, key = written[3], written[4]
        if key is None or any(r.session_id != session_id for r in audit):
            return False
        rows: list[str] = []
        params: list[Any] = []
        for n, rec in enumerate(audit, 1):
            rows.append(_AUDIT_ROW.format(n=n))
            snap, child = encode_id(rec.snapshot_id), encode_id(rec.child_id)
            params += (key, key, snap, snap, child, child, pack_audit(rec))
        conn.execute(f"INSERT INTO audit (session, n, snap, child, record) VALUES {', '.join(rows)}", params)
        return True


def _with_session(new: SessionSnapshot, agent: str | None, owner: str | None) -> SessionSnapshot:
    """`new` as it reads back: with its session's agent and owner (when the session names them)."""
    if (agent is not None and new.agent != agent) or (owner is not None and new.owner != owner):
        return new.model_copy(update={"agent": agent or new.agent, "owner": owner or new.owner})
    return new
