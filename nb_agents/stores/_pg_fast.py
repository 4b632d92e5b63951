"""One-statement writes of `PostgresSessionStore`: a cycle's writes without ``BEGIN``/``COMMIT``.

An approval cycle writes three times: the paused turn's new row, the claim
with its child's pending row, and the child's final row (fenced, with its
audit records). The general path (`._pg_rows` in a transaction of
`postgres.py`) locks the id, reads the row, runs the mutator, writes: five to
eight statements each. Each of these three is one statement here, in
autocommit (its own transaction), because the store already knows what the
general path would read, and the statement checks that it still holds:

* a save of a row that this process wrote or read without a history (a
  pending row) runs the mutator on that copy (`RecentRows`), and updates the
  row only ``WHERE rev`` is still the copy's; a save of an id this process has
  never seen runs the mutator on None and inserts ``ON CONFLICT DO NOTHING``;
* a fenced save holds the claim ``FOR SHARE`` in the statement (a
  replacement waits for it, as in the general path), and writes only when the
  claim is still the fence's generation;
* a history is encoded against its parent (the delta of `._delta`) only when
  the parent is a row this process knows at its revision, locked ``FOR SHARE
  SKIP LOCKED`` in the statement, and still at that revision;
* the session row is upserted from the written row (a CTE on its
  ``RETURNING``), the audit records inserted only when the row was, and an
  abort of a pending row's run notifies, in the same statement;
* a claim inserts itself ``ON CONFLICT DO NOTHING`` and, only when it did,
  its child's pending row: the first claim wins, and writes its row; when its
  task's read of the row was answered from this process's copy (`._pg_lend`),
  it claims only if the row is still that copy (else `MOVED`: read it again).

Whatever does not hold (the row was written meanwhile, the claim moved, the
base is being rewritten, a row with a history is rewritten, the mutator
writes nothing, a save that adds session rules) writes nothing, and the
store takes the general path, which decides (and raises) as before. Nothing
else changes: the same rows, the same locks in the same order (the claim, then
the base, then the row), the same notifications.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..types import Message, SessionSnapshot
from ._base import SLOW
from ._delta import MessageCache, encode_row, to_json
from ._pg_aio import Statements
from ._pg_lend import GUARD, MOVED, Copy, Lent, lendable
from ._pg_rows import (
    BY_ID,
    CHAIN,
    CHANNEL,
    LEAVES,
    aborts_a_run,
    copy_of,
    decode_read,
    needs_chain,
    notify_payload,
)
from ._tx import apply_mutator
from .base import AuditRecord, Fence, ResumeClaim, SnapshotMutator

__all__ = ["MOVED", "SLOW", "Fast", "RecentRows"]

_KEEP = 512  # rows remembered
_COLUMNS = "snapshot_id, session_id, parent_id, created_at, meta, state, base_seq, base_len, tail, rev"
_VALUES = (
    "%(id)s, %(session_id)s, %(parent_id)s, %(created_at)s, %(meta)s, %(state)s, %(base_seq)s, "
    "%(base_len)s, %(tail)s"
)
_SESSION_UPSERT = """s AS (INSERT INTO nb_agents_sessions AS ss (session_id, agent, owner)
        SELECT %(session_id)s, %(agent)s, %(owner)s FROM w
        ON CONFLICT (session_id) DO UPDATE
            SET agent = coalesce(ss.agent, EXCLUDED.agent), owner = coalesce(ss.owner, EXCLUDED.owner)
            WHERE (ss.agent IS NULL AND EXCLUDED.agent IS NOT NULL)
                OR (ss.owner IS NULL AND EXCLUDED.owner IS NOT NULL)
        RETURNING agent, owner)"""
_SESSION_COLUMNS = """(SELECT agent FROM s), (SELECT owner FROM s),
    (SELECT agent FROM nb_agents_sessions WHERE session_id = %(session_id)s),
    (SELECT owner FROM nb_agents_sessions WHERE session_id = %(session_id)s)"""
_CLAIM_READ = "SELECT digest, child_id, generation FROM nb_agents_claims WHERE snapshot_id = %s"
_CLAIM_ATTEMPTS = 3


class RecentRows:
    """What this process last wrote or read of a row: its ``seq``, ``rev``; for a row
    without a history, the row itself (the mutator's input on the one-statement path);
    for a row an answer's read may be answered from (`._pg_lend.lendable`), its `Copy`."""

    def __init__(self) -> None:
        self._rows: OrderedDict[str, tuple[int, int, SessionSnapshot | None, Copy | None]] = OrderedDict()
        self._lock = threading.Lock()

    def note(
        self, snapshot_id: str, seq: int, rev: int, snap: SessionSnapshot, copy: Copy | None = None
    ) -> None:
        kept = snap if snap.state is None else None
        copy = copy if copy is not None and lendable(snap) else None
        with self._lock:
            had = self._rows.get(snapshot_id)
            if had is not None and (had[0], had[1]) > (seq, rev):
                return  # an older read finishing late
            if had is not None and (had[0], had[1]) == (seq, rev) and copy is None:
                copy = had[3]  # the same revision, known without its columns
            self._rows[snapshot_id] = (seq, rev, kept, copy)
            self._rows.move_to_end(snapshot_id)
            while len(self._rows) > _KEEP:
                self._rows.popitem(last=False)

    def get(self, snapshot_id: str) -> tuple[int, int, SessionSnapshot | None, Copy | None] | None:
        with self._lock:
            return self._rows.get(snapshot_id)

    def copy(self, snapshot_id: str) -> tuple[int, int, Copy | None] | None:
        """The row's ``(seq, rev, copy)``, for `._pg_lend.Lender.lend`."""
        with self._lock:
            got = self._rows.get(snapshot_id)
        return (got[0], got[1], got[3]) if got is not None else None

    def forget(self, snapshot_id: str) -> None:
        """The row is not as this process knew it: read it before anything builds on it."""
        with self._lock:
            self._rows.pop(snapshot_id, None)

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()


class Fast:
    """The one-statement writes and reads, each a generator of its statements (`._pg_aio.Statements`), run on
    a connection outside any transaction: on the caller's loop (`._pg_aio.LoopConnections`), or in
    a worker thread (`._pg_aio.drive`).

    Args:
        recent: The rows this process knows.
        cache: Histories by ``(seq, rev)`` (read for the base; written rows go in).
    """

    def __init__(self, recent: RecentRows, cache: MessageCache) -> None:
        self.recent = recent
        self.cache = cache

    def read(self, snapshot_id: str) -> Statements[SessionSnapshot | str | None]:
        """The row, or None: one statement (two when its history is built on a base not cached
        here); `SLOW` when the row was written between the two (the general path then reads it
        in one snapshot)."""
        rows = yield BY_ID, (snapshot_id,)
        if not rows:
            return None
        row = rows[0]
        links = (yield CHAIN, (row[0],)) if needs_chain(row, self.cache) else []
        snap = decode_read(row, self.cache, lambda seq: links)
        if snap is None:
            return SLOW
        self.recent.note(snapshot_id, row[0], row[1], snap, copy_of(row))
        return snap

    def latest(self, session_id: str) -> Statements[SessionSnapshot | str | None]:
        """The session's newest leaf (`stores.base.leaves`), as `read` reads it, or None."""
        leaves = yield LEAVES, {"sid": session_id}
        found = max(((r[0], r[1]) for r in leaves), default=None)
        if found is None:
            return None
        return (yield from self.read(found[1]))

    def save(
        self, snapshot_id: str, mutator: SnapshotMutator, audit: Sequence[AuditRecord], fence: Fence | None
    ) -> Statements[SessionSnapshot | str]:
        """Write the row in one statement: what was written, or `SLOW`."""
        known = self.recent.get(snapshot_id)
        if known is not None and known[2] is None:
            return SLOW  # a row with a history: rewriting it may move the rows built on it
        current = known[2].model_copy() if known is not None and known[2] is not None else None
        new = apply_mutator(snapshot_id, current, mutator)
        if new is None:
            return SLOW  # "write nothing" was decided on a copy: the general path decides on the row
        base = self._base(new, known[0] if known is not None else None)
        if isinstance(base, str):
            return SLOW
        cols, messages = encode_row(
            new, lambda: (base[0], base[2]) if base else None, in_session=new.session_id is not None
        )
        params: dict[str, Any] = dict(zip(_NAMES, (snapshot_id, *cols), strict=True))
        ctes, guards = [], []
        if fence is not None:
            ctes.append(
                "f AS (SELECT 1 FROM nb_agents_claims WHERE snapshot_id = %(f_parent)s "
                "AND child_id = %(f_child)s AND generation = %(f_gen)s FOR SHARE)"
            )
            guards.append("EXISTS (SELECT 1 FROM f)")
            params.update(f_parent=fence.parent_id, f_child=fence.child_id, f_gen=fence.generation)
        if cols[5] is not None:  # encoded against the base: it must stay as read until this commits
            assert base
            ctes.append(
                "b AS (SELECT 1 FROM nb_agents_snapshots WHERE seq = %(b_seq)s AND rev = %(b_rev)s "
                "FOR SHARE SKIP LOCKED)"
            )
            guards.append("EXISTS (SELECT 1 FROM b)")
            params.update(b_seq=base[0], b_rev=base[1])
        cond = " AND ".join(guards) or "TRUE"
        if known is None:
            ctes.append(
                f"w AS (INSERT INTO nb_agents_snapshots ({_COLUMNS}) SELECT {_VALUES}, 1 WHERE {cond} "
                "ON CONFLICT (snapshot_id) DO NOTHING RETURNING seq, rev)"
            )
        else:
            notify = f", pg_notify('{CHANNEL}', %(payload)s)" if aborts_a_run(current, new) else ""
            params.update(rev=known[1], payload=notify_payload(snapshot_id))
            ctes.append(
                "w AS (UPDATE nb_agents_snapshots SET session_id = %(session_id)s, "
                "parent_id = %(parent_id)s, created_at = %(created_at)s, meta = %(meta)s, "
                "state = %(state)s, base_seq = %(base_seq)s, base_len = %(base_len)s, tail = %(tail)s, "
                "rev = %(rev)s + 1 "
                f"WHERE snapshot_id = %(id)s AND rev = %(rev)s AND {cond} RETURNING seq, rev{notify})"
            )
        # the session's agent and owner, from its row (set from this row's where it names none)
        ask_session = new.session_id is not None and (
            current is None
            or current.session_id != new.session_id
            or (current.agent is None and new.agent is not None)
            or (current.owner is None and new.owner is not None)
        )
        if ask_session:
            ctes.append(_SESSION_UPSERT)
            params.update(agent=new.agent, owner=new.owner)
        if audit:
            ctes.append(
                "a AS (INSERT INTO nb_agents_audit (session_id, record) SELECT x.sid, x.rec FROM w, "
                "unnest(%(a_sid)s::text[], %(a_rec)s::text[]) WITH ORDINALITY AS x(sid, rec, n) ORDER BY x.n)"
            )
            params.update(a_sid=[r.session_id for r in audit], a_rec=[to_json(r.to_dict()) for r in audit])
        session_cols = _SESSION_COLUMNS if ask_session else "NULL, NULL, NULL, NULL"
        sql = f"WITH {', '.join(ctes)} SELECT (SELECT seq FROM w), (SELECT rev FROM w), {session_cols}"
        got = _first((yield sql, params))
        if got is None or got[0] is None:
            return SLOW  # nothing written: the row moved on, the claim or the base did not hold
        seq, rev = int(got[0]), int(got[1])
        written = new
        # the session's agent and owner as a read joins them (None: not known here)
        session: tuple[str | None, str | None] | None = (None, None) if new.session_id is None else None
        if ask_session:
            agent, owner = (got[2], got[3]) if got[2] is not None or got[3] is not None else (got[4], got[5])
            session = agent, owner
            if (agent is not None and new.agent != agent) or (owner is not None and new.owner != owner):
                written = new.model_copy(update={"agent": agent or new.agent, "owner": owner or new.owner})
        if messages is not None:
            self.cache.put(seq, rev, messages)
        copy = None
        if session is not None and cols[3] is not None:
            copy = Copy(cols[3], cols[4], cols[7], cols[5] is not None, *session)
        self.recent.note(snapshot_id, seq, rev, written, copy)
        return written

    def _base(self, new: SessionSnapshot, own_seq: int | None) -> tuple[int, int, list[Message]] | str | None:
        """The parent to encode `new`'s history against, as ``(seq, rev, messages)``; None
        (no history, or no parent: stored whole anyway), or `SLOW` (a parent not known here)."""
        if new.state is None or not new.parent_id:
            return None
        parent = self.recent.get(new.parent_id)
        if parent is None:
            return SLOW
        seq, rev = parent[0], parent[1]
        if own_seq is not None and seq >= own_seq:
            return None  # a base is always an older row
        messages = self.cache.get(seq, rev)
        if messages is None:
            return SLOW
        return seq, rev, list(messages)

    def claim(
        self, snapshot_id: str, claim: ResumeClaim, pending: SessionSnapshot | None, lent: Lent | None = None
    ) -> Statements[tuple[bool, ResumeClaim | None] | str]:
        """Claim in one statement, with the pending row: ``(True, None)`` when this call won,
        ``(False, the current claim)`` when another did, or `SLOW`; with `lent` (what this
        task's read of the row got), only while the row is still that: else `MOVED`."""
        if pending is not None and (pending.state is not None or self.recent.get(claim.child_id) is not None):
            return SLOW
        params: dict[str, Any] = {"c_id": snapshot_id, "c_digest": claim.digest, "c_child": claim.child_id}
        values = "VALUES (%(c_id)s, %(c_digest)s, %(c_child)s, 1)"
        ctes = []
        if lent is not None:
            ctes.append(GUARD)
            params.update(lent.params())
            values = "SELECT %(c_id)s, %(c_digest)s, %(c_child)s, 1 FROM g"
        ctes.append(
            "c AS (INSERT INTO nb_agents_claims (snapshot_id, digest, child_id, generation) "
            f"{values} ON CONFLICT (snapshot_id) DO NOTHING RETURNING 1)"
        )
        row: SessionSnapshot | None = None
        if pending is not None:
            row = apply_mutator(claim.child_id, None, lambda cur: pending)
            assert row is not None
            cols, _ = encode_row(row, lambda: None, in_session=row.session_id is not None)
            params.update(zip(_NAMES, (claim.child_id, *cols), strict=True))
            ctes.append(
                f"w AS (INSERT INTO nb_agents_snapshots ({_COLUMNS}) SELECT {_VALUES}, 1 FROM c "
                "ON CONFLICT (snapshot_id) DO NOTHING RETURNING seq, rev)"
            )
            if row.session_id is not None:
                ctes.append(_SESSION_UPSERT)
                params.update(agent=row.agent, owner=row.owner)
        tail = ", (SELECT seq FROM w), (SELECT rev FROM w)" if pending is not None else ", NULL, NULL"
        tail += f", {_SESSION_COLUMNS}" if row is not None and row.session_id is not None else ""
        guard = ", EXISTS (SELECT 1 FROM g)" if lent is not None else ""
        for _ in range(_CLAIM_ATTEMPTS):
            got = _first(
                (yield f"WITH {', '.join(ctes)} SELECT EXISTS (SELECT 1 FROM c){tail}{guard}", params)
            )
            assert got is not None
            if got[0]:
                if row is not None and got[1] is not None:
                    self._note_pending(claim.child_id, row, got, row.session_id is not None)
                return True, None
            if lent is not None and not got[-1]:
                return MOVED  # the row is not as this task read it: nothing was claimed
            found = _first((yield _CLAIM_READ, (snapshot_id,)))
            if found is None:
                continue  # released since: claim again
            current = ResumeClaim(found[0], found[1], found[2])
            if current == ResumeClaim(claim.digest, claim.child_id, 1):
                return True, None  # ours: a retry of a claim that committed
            return False, current
        return SLOW

    def _note_pending(self, child_id: str, row: SessionSnapshot, got: tuple[Any, ...], session: bool) -> None:
        agent, owner = row.agent, row.owner
        if session:
            agent, owner = (got[3], got[4]) if got[3] is not None or got[4] is not None else (got[5], got[6])
        if (agent is not None and row.agent != agent) or (owner is not None and row.owner != owner):
            row = row.model_copy(update={"agent": agent or row.agent, "owner": owner or row.owner})
        self.recent.note(child_id, int(got[1]), int(got[2]), row)


def _first(rows: list[Any]) -> Any:
    return rows[0] if rows else None


_NAMES = ("id", "session_id", "parent_id", "created_at", "meta", "state", "base_seq", "base_len", "tail")
