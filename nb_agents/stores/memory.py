"""`InMemorySessionStore`: snapshots in this process's memory, for tests, demos
and single-process servers.

Rows are kept encoded (JSON text), each holding only the messages its turn
added on top of its parent's (as `SqliteSessionStore` does): a long-running
process does not keep every message it has seen as live objects, which would
make each full garbage collection scan them all. Recently used histories stay
decoded in a small cache, so a turn costs what it adds, not a decode of the
whole history. A `threading.Lock` makes each operation atomic across threads
and event loops.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence

from pydantic_core import PydanticSerializationError

from ..types import Message, SessionSnapshot, SessionState
from ._delta import (
    MessageCache,
    encode_meta,
    encode_state,
    history,
    messages_json,
    rebased_tail,
    shared_prefix,
)
from .base import (
    AuditRecord,
    ResumeClaim,
    SnapshotMutator,
    apply_mutator,
    pending_mutator,
    with_effective_status,
)

__all__ = ["InMemorySessionStore"]

_RECENT = 256  # decoded rows kept: enough for the turns in flight, few enough for the GC

# A stored row: (seq, rev, session_id, parent_id, created_at, meta, state, base_id, base_len, tail).
# Plain tuples of str/int/None: the garbage collector stops tracking them.
_Row = tuple[int, int, str | None, str | None, str, str, str | None, str | None, int, str | None]


class InMemorySessionStore:
    """A session store that lives as long as the Python process.

    Example:
        >>> store = InMemorySessionStore()
    """

    poll_interval = 0.02

    def __init__(self) -> None:
        self._rows: dict[str, _Row] = {}
        self._by_session: dict[str, dict[str, None]] = {}  # an ordered set per session
        self._dependents: dict[str, set[str]] = {}  # base row -> rows built on its messages
        self._claims: dict[str, ResumeClaim] = {}
        self._audit: dict[str, list[AuditRecord]] = {}
        self._cache = MessageCache()
        # the last rows saved or read, decoded: a turn reads what the previous one wrote
        self._recent: OrderedDict[str, tuple[int, SessionSnapshot]] = OrderedDict()
        self._seq = 0
        self._lock = threading.Lock()

    async def get_snapshot(self, snapshot_id: str) -> SessionSnapshot | None:
        with self._lock:
            return with_effective_status(self._decode(snapshot_id))

    async def get_latest(self, session_id: str) -> SessionSnapshot | None:
        with self._lock:
            rows = [(i, self._rows[i]) for i in self._by_session.get(session_id, {})]
            parents = {row[3] for _, row in rows if row[3]}
            leaves = [(row[4], i) for i, row in rows if i not in parents]
            return with_effective_status(self._decode(max(leaves)[1])) if leaves else None

    async def save_snapshot(
        self, snapshot_id: str, mutator: SnapshotMutator, *, audit: Sequence[AuditRecord] = ()
    ) -> SessionSnapshot | None:
        with self._lock:
            new = self._save(snapshot_id, mutator)
            if new is not None:
                self._add_audit(audit)
            return new

    async def claim_resume(
        self, snapshot_id: str, digest: str, child_id: str, *, pending: SessionSnapshot | None = None
    ) -> ResumeClaim | None:
        with self._lock:
            existing = self._claims.get(snapshot_id)
            if existing is not None:
                return existing
            self._claims[snapshot_id] = ResumeClaim(digest, child_id)
            if pending is not None:
                self._save(child_id, pending_mutator(pending))
            return None

    async def release_claim(self, snapshot_id: str, child_id: str) -> None:
        with self._lock:
            claim = self._claims.get(snapshot_id)
            if claim is not None and claim.child_id == child_id:
                del self._claims[snapshot_id]

    async def session_ids(self) -> list[str]:
        with self._lock:
            return list(self._by_session)

    async def add_audit(self, records: Sequence[AuditRecord]) -> None:
        with self._lock:
            self._add_audit(records)

    async def audit(self, session_id: str) -> list[AuditRecord]:
        with self._lock:
            return list(self._audit.get(session_id, []))

    # -- under the lock ---------------------------------------------------------------
    def _messages(self, snapshot_id: str) -> list[Message]:
        seq, rev, *_, base_id, _base_len, tail = self._rows[snapshot_id]

        def chain() -> Iterator[tuple[int, int, int, str | None]]:
            cur: str | None = snapshot_id
            while cur is not None:
                row = self._rows[cur]
                yield row[0], row[1], row[8], row[9]
                cur = row[7]

        return history(self._cache, seq, rev, base_id is not None, tail, chain)

    def _decode(self, snapshot_id: str) -> SessionSnapshot | None:
        row = self._rows.get(snapshot_id)
        if row is None:
            return None
        hit = self._recent.get(snapshot_id)
        if hit is not None and hit[0] == row[1]:
            self._recent.move_to_end(snapshot_id)
            return hit[1]
        snap = SessionSnapshot.model_validate(json.loads(row[5]))
        if row[6] is not None:
            state = SessionState.model_validate(json.loads(row[6]))
            if row[9] is not None:
                state.messages = self._messages(snapshot_id)  # attached, not re-validated
            snap.state = state
        self._remember(snapshot_id, row[1], snap)
        return snap

    def _remember(self, snapshot_id: str, rev: int, snap: SessionSnapshot) -> None:
        self._recent[snapshot_id] = (rev, snap)
        self._recent.move_to_end(snapshot_id)
        if len(self._recent) > _RECENT:
            self._recent.popitem(last=False)

    def _save(self, snapshot_id: str, mutator: SnapshotMutator) -> SessionSnapshot | None:
        current = self._decode(snapshot_id)
        new = apply_mutator(snapshot_id, current, mutator)
        if new is None:
            return None
        old = self._rows.get(snapshot_id)
        base_id: str | None = None
        state_json: str | None = None
        base_len = 0
        tail: str | None = None
        messages: list[Message] | None = None
        if new.state is not None:
            messages = list(new.state.messages)
            parent_id = new.parent_id if new.parent_id != snapshot_id else None
            parent = self._rows.get(parent_id) if parent_id else None
            base = (
                self._messages(parent_id)
                if parent_id and parent is not None and parent[6] is not None
                else None
            )
            state_json, base_len, tail = _encode_state(new.state, base)
            base_id = new.parent_id if base is not None and base_len else None
        if old is not None and current is not None and current.state is not None:
            self._rebase_dependents(snapshot_id, current.state.messages, messages or [])
        seq, rev = (old[0], old[1] + 1) if old is not None else (self._next_seq(), 0)
        session_id = new.session_id
        self._rows[snapshot_id] = (
            seq, rev, session_id, new.parent_id, new.created_at or "", _encode_meta(new),
            state_json, base_id, base_len, tail,
        )  # fmt: skip
        if old is not None and old[7] is not None and old[7] != base_id:
            self._dependents.get(old[7], set()).discard(snapshot_id)
        if base_id is not None:
            self._dependents.setdefault(base_id, set()).add(snapshot_id)
        if messages is not None and tail is not None:
            self._cache.put(seq, rev, messages)
        self._remember(snapshot_id, rev, new)
        if session_id:
            self._by_session.setdefault(session_id, {})[snapshot_id] = None
        return new

    def _rebase_dependents(self, snapshot_id: str, old: Sequence[Message], new: Sequence[Message]) -> None:
        """Rows built on messages this rewrite drops keep them in their own tail."""
        keep = shared_prefix(list(new), list(old))
        for dep in list(self._dependents.get(snapshot_id, ())):
            row = self._rows[dep]
            if row[8] <= keep:
                continue
            tail = rebased_tail(old, keep, row[8], row[9])
            base_id = snapshot_id if keep else None
            self._rows[dep] = (row[0], row[1] + 1, *row[2:7], base_id, keep, tail)
            if base_id is None:
                self._dependents[snapshot_id].discard(dep)

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _add_audit(self, records: Sequence[AuditRecord]) -> None:
        for rec in records:
            self._audit.setdefault(rec.session_id, []).append(rec)


def _dump_json(value: SessionSnapshot | SessionState, exclude: set[str]) -> str:
    try:  # pydantic-core's encoder, unless a value needs the escapes of the slow path
        return value.model_dump_json(by_alias=True, exclude_none=True, exclude_unset=True, exclude=exclude)
    except PydanticSerializationError:
        return ""


def _encode_meta(snap: SessionSnapshot) -> str:
    return _dump_json(snap, {"state"}) or encode_meta(snap)


def _encode_state(state: SessionState, base: Sequence[Message] | None) -> tuple[str, int, str | None]:
    """As `encode_state`, on pydantic-core's encoder when it can."""
    messages = list(state.messages)
    base_len = shared_prefix(messages, base) if base else 0
    rest = _dump_json(state, {"messages"})
    if not rest:
        return encode_state(state, base)
    if "messages" not in state.model_fields_set:
        return rest, base_len, None
    return rest, base_len, messages_json(messages[base_len:]).decode("utf-8", "surrogatepass")
