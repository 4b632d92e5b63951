"""Known-row reads and writes of `SqliteSessionStore`: a store call in one statement, or a few.

An approval cycle reads twice (the paused row, the session's rules) and
writes three times: the paused turn's new row, the claim with its child's
pending row, and the child's final row (fenced, with its audit records). The
general path (`._sqlite_rows` in a transaction of `sqlite.py`) looks up
every id, session and reference it touches before it writes: ten or more
statements a call. Here a call is one statement, or a short transaction of
two to four, because this process already knows what the general path would
look up (`Fast`: the rows and sessions it wrote or read, decoded), and each
statement checks that what it assumed still holds:

* a read is one ``SELECT`` outside a transaction; a row known here at the
  revision read (and with its session's agent and owner as read) is
  answered from what is known, as a copy, without decoding;
* a save of an id this process has not seen runs the mutator on None and
  inserts the row ``ON CONFLICT DO NOTHING``, with its session's row unless
  the session is known; the row's ``seq`` (and a new session's ``first``) is
  the next one, chosen in the statement;
* a save of a known row without a history (a pending row) runs the mutator
  on a copy of it and updates the row only ``WHERE rev`` (and its session's
  agent and owner) are still as known: one statement, without ``BEGIN``,
  unless audit records go with it;
* a fenced save finds the claim it names in its statement, and a history is
  encoded against its parent (`._delta`'s rule) only when that is a row
  known here, checked in the statement to be at the revision known;
* a claim inserts its child's pending row, then itself ``WHERE NOT EXISTS``
  another claim, in one transaction.

Whatever does not hold (the row exists or was written meanwhile, the claim
moved, the base was rewritten, the row has a history, the mutator writes
nothing, an audit record of another session) writes nothing, and the store
takes the general path, which decides (and raises) as before. A mutator may
so run twice, the first time on a copy (`SessionStore.save_snapshot` allows
it). The rows written are the general path's, byte for byte. What a
transaction wrote is known here only once it committed.

`Fast` is also the store's cache of histories (`._delta.Histories`): a
known row's messages, else the links the general path rebuilt.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

from .._sync import reset_after_fork
from ..types import Message, SessionSnapshot
from ._base import SLOW
from ._delta import MessageCache, detached, history
from ._sqlite_codec import encode_digest, encode_id, pack_audit, pack_row, unpack_row, unpack_tail
from ._sqlite_rows import BY_ID, RELEAF, Seen
from ._tx import apply_mutator
from .base import AuditRecord, Fence, ResumeClaim, SnapshotMutator

__all__ = ["SLOW", "Fast"]

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
    WHERE seq = :seq AND rev = :rev AND {guard}"""
_FENCE = """EXISTS (SELECT 1 FROM claims
    WHERE snap IN (+(SELECT seq FROM snapshots WHERE id = :f_parent), :f_parent)
    AND child IN (+(SELECT seq FROM snapshots WHERE id = :f_child), :f_child) AND generation = :f_gen)"""
_BASE = "EXISTS (SELECT 1 FROM snapshots WHERE seq = :b_seq AND rev = :b_rev)"
_OWNERS = """(SELECT agent FROM sessions WHERE key = :key) IS :agent
    AND (SELECT owner FROM sessions WHERE key = :key) IS :owner"""
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
_AUDIT = "INSERT INTO audit (session, n, snap, child, record) VALUES "
_RULES = "SELECT r.rules FROM rules r JOIN sessions ss ON ss.key = r.session WHERE ss.id = ?"
_RULES_BY_KEY = "SELECT rules FROM rules WHERE session = ?"


def _statements(template: str, *guards: str) -> dict[tuple[bool, ...], str]:
    """`template` with each combination of `guards` (in its ``WHERE``), by which are on."""
    out = {}
    for n in range(1 << len(guards)):
        on = tuple(bool(n >> i & 1) for i in range(len(guards)))
        out[on] = template.format(guard=" AND ".join(g for g, o in zip(guards, on, strict=True) if o) or "1")
    return out


_INSERTS = _statements(_INSERT, _FENCE, _BASE)
_UPDATES = _statements(_UPDATE, _FENCE, _BASE, _OWNERS)


class Fast:
    """The known-row calls (each on a connection, in a transaction of its own, or in a batch's:
    `._sqlite_writes`), what they know, and the store's histories by ``(seq, rev)``. A forked
    child starts knowing nothing."""

    def __init__(self) -> None:
        self.rows: OrderedDict[str, _Known] = OrderedDict()
        self._seqs: dict[Hashable, str] = {}  # seq -> id, of `rows`
        # session id -> (key, agent, owner): a session's agent and owner, once set, never change
        self.sessions: OrderedDict[str, tuple[int, str | None, str | None]] = OrderedDict()
        self.histories = MessageCache()  # links of base chains the general path rebuilt
        self._messages = 0
        self._lock = threading.Lock()
        self._local = threading.local()  # `held`: what a batched write would remember, till it commits
        reset_after_fork(self, Fast._forked)

    def _forked(self) -> None:
        """In a forked child: forget what the parent knew (its writes since go on without it),
        with a lock of its own (another thread of the parent may have held this one)."""
        self._lock = threading.Lock()
        self._local = threading.local()
        self.histories = MessageCache()
        self.clear()

    # -- what is known ----------------------------------------------------------------
    def get(self, seq: Hashable, rev: int) -> Sequence[Message] | None:
        """A row's history at revision `rev`, if it is known here (`._delta.Histories`)."""
        snapshot_id = self._seqs.get(seq)
        known = self.rows.get(snapshot_id) if snapshot_id is not None else None
        if known is not None and known[1] == rev and known[5].state is not None:
            return known[5].state.messages
        return self.histories.get(seq, rev)

    def put(self, seq: Hashable, rev: int, messages: Sequence[Message]) -> None:
        held = getattr(self._local, "held", None)
        if held is not None:
            held[1].append((seq, rev, messages))
            return
        self.histories.put(seq, rev, messages)

    def remember(self, seen: Sequence[Seen]) -> None:
        """Keep what a committed transaction read or wrote (the general path's, or one of these)."""
        held = getattr(self._local, "held", None)
        if held is not None:
            held[0].extend(seen)
            return
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
                self._seqs[seq] = snapshot_id
                self._messages += len(snap.state.messages) if snap.state is not None else 0
                if session_id is not None and key is not None:
                    self.sessions[session_id] = (key, agent, owner)
                    self.sessions.move_to_end(session_id)
            while len(rows) > _KEEP or (self._messages > _KEEP_MESSAGES and len(rows) > 1):
                gone = rows.popitem(last=False)[1]
                self._seqs.pop(gone[0], None)
                self._messages -= len(gone[5].state.messages) if gone[5].state is not None else 0
            while len(self.sessions) > _KEEP_SESSIONS:
                self.sessions.popitem(last=False)

    def hold(self) -> None:
        """What this thread's calls would remember waits (in a batch, till it commits: `held`)."""
        self._local.held = ([], [])

    def held(self) -> Any:
        """What this thread held since `hold` (for `keep`), and hold no more."""
        held, self._local.held = getattr(self._local, "held", None), None
        return held

    def keep(self, held: Any) -> None:
        """Keep what `held` returned: its batch committed."""
        for seq, rev, messages in held[1]:
            self.histories.put(seq, rev, messages)
        self.remember(held[0])

    def clear(self) -> None:
        with self._lock:
            self.rows.clear()
            self._seqs.clear()
            self.sessions.clear()
            self.histories.clear()
            self._messages = 0

    # -- reads ------------------------------------------------------------------------
    def read(self, conn: sqlite3.Connection, snapshot_id: str) -> SessionSnapshot | str | None:
        """The row (a copy), or None, in one statement; `SLOW` when its history needs another."""
        row = conn.execute(BY_ID, (encode_id(snapshot_id),)).fetchone()
        if row is None:
            return None
        seq, rev, tail = row[0], row[1], row[3]
        known = self.rows.get(snapshot_id)
        if known is not None and known[:2] == (seq, rev) and known[3:5] == (row[13], row[14]):
            return detached(known[5])
        if row[2] is not None and self.get(seq, rev) is None:
            return SLOW  # its base chain takes a second query: in one transaction, the general path's
        snap = unpack_row(row, lambda: history(self, seq, rev, False, tail, list, unpack_tail))
        session_id = snap.session_id if row[9] is not None else None
        self.remember([(snapshot_id, seq, rev, session_id, row[9], row[13], row[14], detached(snap))])
        return snap

    def rules(self, conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
        """The session's approval rules, in one statement."""
        session = self.sessions.get(session_id)
        if session is not None:
            found = conn.execute(_RULES_BY_KEY, (session[0],)).fetchone()
        else:
            found = conn.execute(_RULES, (encode_id(session_id),)).fetchone()
        return list(json.loads(found[0])) if found is not None else []

    # -- writes -----------------------------------------------------------------------
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
        if known is not None and known[5].state is not None:
            return SLOW  # a row with a history: rewriting it may move the rows built on it
        # a transaction of its own, unless one UPDATE, or in a batch's (which rolls back a `SLOW`)
        own = (known is None or bool(audit)) and not conn.in_transaction
        if own:
            conn.execute("BEGIN IMMEDIATE")
        try:
            done = self._save(conn, snapshot_id, known, mutator, audit, fence)
            if own:
                conn.execute("ROLLBACK" if isinstance(done, str) else "COMMIT")
        except BaseException:
            if own and conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if isinstance(done, str):
            return SLOW
        self.remember([done[1]])
        return done[0]

    def claim(
        self, conn: sqlite3.Connection, snapshot_id: str, claim: ResumeClaim, pending: SessionSnapshot | None
    ) -> str | None:
        """Claim, with the pending row, in one transaction: None when this call won, else `SLOW`
        (the claim was taken, or the child's row exists: the general path reads what is there)."""
        params = {"snap": encode_id(snapshot_id), "digest": encode_digest(claim.digest)}
        params["child"] = encode_id(claim.child_id)
        if pending is None:  # one statement
            return None if conn.execute(_CLAIM, params).rowcount == 1 else SLOW
        if claim.child_id in self.rows:
            return SLOW
        own = not conn.in_transaction  # else a batch's, which rolls back a `SLOW`
        if own:
            conn.execute("BEGIN IMMEDIATE")
        try:
            done = self._save(conn, claim.child_id, None, lambda cur: pending, (), None)
            won = not isinstance(done, str) and conn.execute(_CLAIM, params).rowcount == 1
            if own:
                conn.execute("COMMIT" if won else "ROLLBACK")
        except BaseException:
            if own and conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if isinstance(done, str) or not won:
            return SLOW
        self.remember([done[1]])
        return None

    def _save(
        self,
        conn: sqlite3.Connection,
        snapshot_id: str,
        known: _Known | None,
        mutator: SnapshotMutator,
        audit: Sequence[AuditRecord],
        fence: Fence | None,
    ) -> tuple[SessionSnapshot, Seen] | str:
        """Insert the row (`known` None) or update it, with its audit records, in the caller's
        transaction: the row as it reads back and what to remember once committed, or `SLOW`."""
        current = detached(known[5]) if known is not None else None
        new = apply_mutator(snapshot_id, current, mutator)
        if new is None or new.parent_id == snapshot_id:
            return SLOW  # "write nothing" decided on a copy, or a row its own parent: the general path
        session_id = new.session_id
        if audit and (session_id is None or any(r.session_id != session_id for r in audit)):
            return SLOW  # a record of another session interns it: the general path
        parent = self.rows.get(new.parent_id) if new.parent_id is not None else None
        state = new.state
        base = None
        if state is not None and new.parent_id is not None and "messages" in state.model_fields_set:
            if parent is None:
                return SLOW  # whether the parent is a base is the general path's to find out
            if parent[5].state is not None and (known is None or parent[0] < known[0]):
                base = parent
        key = agent = owner = None
        if known is not None:
            assert current is not None
            key, agent, owner = known[2], known[3], known[4]
            if (
                session_id != current.session_id
                or new.parent_id != current.parent_id
                or (key is not None and agent is None and new.agent is not None)
                or (key is not None and owner is None and new.owner is not None)
            ):
                return SLOW  # a row that moves, or names its session's agent first: the general path
        elif session_id is not None:
            session = self.sessions.get(session_id)
            if (
                session is None
                or (session[1] is None and new.agent is not None)
                or (session[2] is None and new.owner is not None)
            ):
                # the session's row, with the agent and owner it names if it names none yet
                key = conn.execute(_SESSION, (encode_id(session_id), new.agent, new.owner)).fetchone()[0]
            else:
                key = session[0]
        (created, kind, meta, state_text, base_len, tail), _ = pack_row(
            new, base[5].state.messages if base is not None and base[5].state is not None else None,
            in_session=key is not None,
        )  # fmt: skip
        params: dict[str, Any] = {
            "created": created, "kind": kind, "meta": meta, "state": state_text, "base_len": base_len,
            "tail": tail, "key": key,
        }  # fmt: skip
        if fence is not None:
            params.update(f_parent=encode_id(fence.parent_id), f_child=encode_id(fence.child_id))
            params["f_gen"] = fence.generation
        if base_len is not None:
            assert base is not None
            params.update(b_seq=base[0], b_rev=base[1])
        if known is not None:  # the row, where it is still as known
            seq, rev = known[0], known[1] + 1
            params.update(seq=known[0], rev=known[1], agent=agent, owner=owner)
            sql = _UPDATES[fence is not None, base_len is not None, key is not None]
            if conn.execute(sql, params).rowcount != 1:
                return SLOW
        else:
            row_id = encode_id(snapshot_id)
            parent_id = encode_id(new.parent_id) if new.parent_id is not None else None
            params.update(id=row_id, parent=parent_id, parent_seq=parent[0] if parent is not None else None)
            got = conn.execute(_INSERTS[fence is not None, base_len is not None], params).fetchall()
            if not got:
                return SLOW  # the row exists, or a check did not hold
            seq, adopted, agent, owner = got[0]
            rev = 1
            if adopted:  # rows written before this one named it: adopted, as the general path does
                conn.execute(_ADOPT, (seq, row_id))
                conn.execute(RELEAF, (seq,))
            if parent_id is not None and key is not None and (parent is None or parent[2] == key):
                conn.execute(_UNLEAF, (parent_id, key))
        if audit:
            values: list[str] = []
            args: list[Any] = []
            for n, rec in enumerate(audit, 1):
                values.append(_AUDIT_ROW.format(n=n))
                snap_ref, child_ref = encode_id(rec.snapshot_id), encode_id(rec.child_id)
                args += (key, key, snap_ref, snap_ref, child_ref, child_ref, pack_audit(rec))
            conn.execute(_AUDIT + ", ".join(values), args)
        if (agent is not None and new.agent != agent) or (owner is not None and new.owner != owner):
            new = new.model_copy(update={"agent": agent or new.agent, "owner": owner or new.owner})
        return new, (snapshot_id, seq, rev, session_id, key, agent, owner, detached(new))
