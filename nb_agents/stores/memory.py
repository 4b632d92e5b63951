"""`InMemorySessionStore`: snapshots in this process's memory, for tests, demos
and single-process servers.

Rows are kept encoded (JSON text), each holding only the messages its turn
added on top of its parent's (as `SqliteSessionStore` does): a long-running
process does not keep every message it has seen as live objects, which would
make each full garbage collection scan them all. Recently used histories stay
decoded in a small cache, so a turn costs what it adds, not a decode of the
whole history; what a read returns is a copy with lists of its own, so a
caller that changes it changes nothing here. A `threading.Lock` makes each
operation atomic across threads and event loops; the shared rules are
`BaseSessionStore`'s, the primitives `_Rows`'.

It can be bounded: beyond ``max_sessions`` the least recently used session
goes, and a session not touched for ``ttl`` goes, each with all its rows,
claims and audit records (checked on every operation, so no thread is
needed). A session whose turn is running (a pending row whose heartbeat is
fresh) or whose claim is unfinished (its child row missing or pending) is
never evicted: a bound can be exceeded while more sessions than that are busy.
A session waiting for an answer is evicted as any other, never silently: see
`nb_agents.stores._memory_evict`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import timedelta
from typing import Any, Concatenate, Final, ParamSpec, TypeVar

from pydantic_core import PydanticSerializationError

from ..types import Message, SessionSnapshot, SessionState
from ._base import BaseSessionStore
from ._delta import (
    MessageCache,
    detached,
    encode_meta,
    encode_state,
    history,
    messages_json,
    rebased_tail,
    shared_prefix,
)
from ._memory_evict import Evictions, evict
from .base import HEARTBEAT_TIMEOUT, AuditRecord, ResumeClaim, leaves

__all__ = ["InMemorySessionStore"]

T = TypeVar("T")
P = ParamSpec("P")

_RECENT = 256  # decoded rows kept: enough for the turns in flight, few enough for the GC

# A stored row is a plain tuple of str/int/None, which the garbage collector stops
# tracking (a NamedTuple would not do: CPython untracks exact tuples only, so a full
# collection would visit every row). Its fields, by index:
_Row = tuple[int, int, str | None, str | None, str, str, str | None, str | None, int, str | None]
_SEQ: Final = 0  # insertion order; with `_REV`, the key of the decoded-history cache
_REV: Final = 1  # bumped by every write of the row
_SESSION: Final = 2
_PARENT: Final = 3
_CREATED: Final = 4  # createdAt, or ""
_META: Final = 5  # the snapshot without its state, as JSON
_STATE: Final = 6  # the state without its messages, as JSON; None without a state
_BASE: Final = 7  # the row whose first `_BASE_LEN` messages this one starts with, or None
_BASE_LEN: Final = 8
_TAIL: Final = 9  # the rest of the messages, as JSON; None when they were never set


class InMemorySessionStore(BaseSessionStore["_Rows"]):
    """A session store that lives as long as the Python process.

    Args:
        max_sessions: Keep at most this many sessions (the least recently
            used go first); None keeps every one.
        ttl: Evict a session not read or written for this long (seconds or
            a `timedelta`); None keeps them.
        heartbeat_timeout: When a pending row whose heartbeat is older reads
            ``expired`` (seconds or a `timedelta`).

    An evicted session reads as unknown. Sessions with a running turn or an
    unfinished claim are never evicted. A session evicted while it waited for
    an answer is logged, and reading it (or answering it) later raises
    ``NOT_FOUND`` saying it was evicted. `nb-agents serve` bounds an unbounded
    store (`bound`): 10,000 sessions, 24 hours by default.

    Example:
        >>> store = InMemorySessionStore(max_sessions=10_000, ttl=3600)
    """

    poll_interval = 0.02

    def __init__(
        self,
        *,
        max_sessions: int | None = None,
        ttl: float | timedelta | None = None,
        heartbeat_timeout: float | timedelta = HEARTBEAT_TIMEOUT,
    ) -> None:
        super().__init__(heartbeat_timeout=heartbeat_timeout)
        self._data = _Rows(None, None, self.heartbeat_timeout)
        self._lock = threading.Lock()
        self.bound(max_sessions=max_sessions, ttl=ttl)

    def bound(self, *, max_sessions: int | None, ttl: float | timedelta | None) -> None:
        """Set the bounds the constructor takes (None: none), from the next operation on."""
        if max_sessions is not None and max_sessions < 1:
            raise ValueError(f"max_sessions must be 1 or more, got {max_sessions}")
        seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
        if seconds is not None and not seconds > 0:
            raise ValueError(f"ttl must be positive, got {ttl!r}")
        self.max_sessions = max_sessions
        self.ttl = timedelta(seconds=seconds) if seconds is not None else None
        with self._lock:
            data = self._data
            data.max_sessions, data.ttl = max_sessions, seconds
            for session_id in data.by_session:  # sessions held before: now counted, as used now
                data.touched.setdefault(session_id, time.monotonic())

    def __repr__(self) -> str:
        bounds = [f"{k}={v!r}" for k, v in (("max_sessions", self.max_sessions), ("ttl", self.ttl)) if v]
        return f"InMemorySessionStore({', '.join(bounds)})"

    async def get_snapshot(self, snapshot_id: str) -> SessionSnapshot | None:
        found = await super().get_snapshot(snapshot_id)
        if found is None:
            self._data.evicted.check(snapshot_id)  # one evicted while it waited says so
        return found

    async def get_latest(self, session_id: str) -> SessionSnapshot | None:
        found = await super().get_latest(session_id)
        if found is None:
            self._data.evicted.check(session_id)
        return found

    async def _run(
        self, write: bool, fn: Callable[Concatenate[_Rows, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        data = self._data
        with self._lock:
            if data.touched:  # bounded, with sessions: what reads as gone must be gone before this
                data.evict(idle_only=True)
            out = fn(data, *args, **kwargs)
            if data.touched:
                data.evict()
            return out


class _Rows:
    """The store's rows, claims and audit trail, and its primitives (`StoreTransaction`).

    Used under the store's lock only.
    """

    def __init__(self, max_sessions: int | None, ttl: float | None, heartbeat_timeout: timedelta) -> None:
        self.max_sessions = max_sessions
        self.ttl = ttl
        self.heartbeat_timeout = heartbeat_timeout
        # sessions by last use, least recent first (kept only when the store is bounded)
        self.touched: OrderedDict[str, float] = OrderedDict()
        self.rows: dict[str, _Row] = {}
        self.by_session: dict[str, dict[str, None]] = {}  # an ordered set per session
        self.dependents: dict[str, set[str]] = {}  # base row -> rows built on its messages
        self.claims: dict[str, ResumeClaim] = {}
        self.audit_log: dict[str, list[AuditRecord]] = {}
        self.session_rules: dict[str, str] = {}  # session -> its rules, as JSON (no alias to a caller's)
        self.cache = MessageCache()
        # the last rows saved or read, decoded: a turn reads what the previous one wrote
        self.recent: OrderedDict[str, tuple[int, SessionSnapshot]] = OrderedDict()
        self.seq = 0
        self.evicted = Evictions()  # the sessions evicted while they waited for an answer

    # -- the primitives ---------------------------------------------------------------
    def get(self, snapshot_id: str) -> SessionSnapshot | None:
        snap = self._decode(snapshot_id)
        if snap is None:
            return None
        self._touch(snap.session_id)
        return detached(snap)

    load = get

    def write(
        self, snapshot_id: str, current: SessionSnapshot | None, new: SessionSnapshot
    ) -> SessionSnapshot:
        old = self.rows.get(snapshot_id)
        base_id: str | None = None
        state_json: str | None = None
        base_len = 0
        tail: str | None = None
        messages: list[Message] | None = None
        if new.state is not None:
            messages = list(new.state.messages)
            parent_id = new.parent_id if new.parent_id != snapshot_id else None
            parent = self.rows.get(parent_id) if parent_id else None
            base = (
                self._messages(parent_id)
                if parent_id and parent is not None and parent[_STATE] is not None
                else None
            )
            state_json, base_len, tail = _encode_state(new.state, base)
            base_id = new.parent_id if base is not None and base_len else None
        if old is not None and current is not None and current.state is not None:
            self._rebase_dependents(snapshot_id, current.state.messages, messages or [])
        if old is not None:
            seq, rev = old[_SEQ], old[_REV] + 1
        else:
            self.seq += 1
            seq, rev = self.seq, 0
        session_id = new.session_id
        self.rows[snapshot_id] = (
            seq,
            rev,
            session_id,
            new.parent_id,
            new.created_at or "",
            _encode_meta(new),
            state_json,
            base_id,
            base_len,
            tail,
        )  # a _Row, in the order of the indexes above
        if old is not None and old[_BASE] is not None and old[_BASE] != base_id:
            self.dependents.get(old[_BASE], set()).discard(snapshot_id)
        if base_id is not None:
            self.dependents.setdefault(base_id, set()).add(snapshot_id)
        if messages is not None and tail is not None:
            self.cache.put(seq, rev, messages)
        self._remember(snapshot_id, rev, detached(new))  # the caller keeps `new`
        if session_id:
            self.by_session.setdefault(session_id, {})[snapshot_id] = None
            self._touch(session_id)
        return new

    def leaves(self, session_id: str) -> Iterable[tuple[str, str]]:
        self._touch(session_id)
        rows = self.rows
        lineage = ((i, rows[i][_PARENT], rows[i][_CREATED]) for i in self.by_session.get(session_id, ()))
        return leaves(lineage)

    def session_ids(self) -> list[str]:
        return list(self.by_session)

    def find_claim(self, snapshot_id: str) -> ResumeClaim | None:
        row = self.rows.get(snapshot_id)
        if row is not None:
            self._touch(row[_SESSION])
        return self.claims.get(snapshot_id)

    def hold_claim(self, snapshot_id: str, *, exclusive: bool) -> ResumeClaim | None:
        return self.find_claim(snapshot_id)  # under the store's lock already

    def add_claim(self, snapshot_id: str, claim: ResumeClaim) -> None:
        self.claims[snapshot_id] = claim

    def swap_claim(self, snapshot_id: str, old: ResumeClaim, new: ResumeClaim) -> None:
        self.claims[snapshot_id] = new

    def drop_claim(self, snapshot_id: str, claim: ResumeClaim) -> None:
        del self.claims[snapshot_id]

    def add_audit(self, records: Sequence[AuditRecord]) -> None:
        for rec in records:
            self.audit_log.setdefault(rec.session_id, []).append(rec)
            self._touch(rec.session_id)

    def audit(self, session_id: str) -> list[AuditRecord]:
        self._touch(session_id)
        return list(self.audit_log.get(session_id, []))

    def rules(self, session_id: str) -> list[dict[str, Any]]:
        self._touch(session_id)
        found = self.session_rules.get(session_id)
        return json.loads(found) if found is not None else []

    load_rules = rules

    def set_rules(self, session_id: str, rules: list[dict[str, Any]]) -> None:
        if rules:
            self.session_rules[session_id] = json.dumps(rules)
        else:
            self.session_rules.pop(session_id, None)
        self._touch(session_id)

    # -- eviction ---------------------------------------------------------------------
    def _touch(self, session_id: str | None) -> None:
        """Mark a session used now (one the store holds: asking for an unknown one adds none)."""
        bounded = self.max_sessions is not None or self.ttl is not None
        if bounded and session_id and (session_id in self.by_session or session_id in self.audit_log):
            self.touched[session_id] = time.monotonic()
            self.touched.move_to_end(session_id)

    def evict(self, *, idle_only: bool = False) -> None:
        """Drop the sessions idle past `ttl` and, unless `idle_only`, those beyond `max_sessions`."""
        evict(self, idle_only=idle_only)

    def _drop_session(self, session_id: str) -> None:
        """Forget the session: its rows, the claims on them, its audit records."""
        ids = self.by_session.pop(session_id, {})
        for snapshot_id in ids:
            for dep in list(self.dependents.get(snapshot_id, ())):
                if dep not in ids:  # a row of another session built on this one keeps its history
                    self._inline(dep)
        for snapshot_id in ids:
            row = self.rows.pop(snapshot_id, None)
            if row is not None and row[_BASE] is not None and row[_BASE] in self.dependents:
                self.dependents[row[_BASE]].discard(snapshot_id)
            self.dependents.pop(snapshot_id, None)
            self.claims.pop(snapshot_id, None)
            self.recent.pop(snapshot_id, None)
        self.audit_log.pop(session_id, None)
        self.session_rules.pop(session_id, None)
        del self.touched[session_id]

    def _inline(self, snapshot_id: str) -> None:
        """Store the row's whole history in its own tail (its base is going away)."""
        row = self.rows[snapshot_id]
        tail = messages_json(self._messages(snapshot_id)).decode("utf-8", "surrogatepass")
        base = row[_BASE]
        if base is not None and base in self.dependents:
            self.dependents[base].discard(snapshot_id)
        self.rows[snapshot_id] = (row[_SEQ], row[_REV] + 1, *row[_SESSION:_BASE], None, 0, tail)

    # -- rows -------------------------------------------------------------------------
    def _messages(self, snapshot_id: str) -> list[Message]:
        row = self.rows[snapshot_id]

        def chain() -> Iterator[tuple[int, int, int, str | None]]:
            cur: str | None = snapshot_id
            while cur is not None:
                link = self.rows[cur]
                yield link[_SEQ], link[_REV], link[_BASE_LEN], link[_TAIL]
                cur = link[_BASE]

        return history(self.cache, row[_SEQ], row[_REV], row[_BASE] is not None, row[_TAIL], chain)

    def _decode(self, snapshot_id: str) -> SessionSnapshot | None:
        """The row, decoded (the cached object itself: never handed out)."""
        row = self.rows.get(snapshot_id)
        if row is None:
            return None
        hit = self.recent.get(snapshot_id)
        if hit is not None and hit[0] == row[_REV]:
            self.recent.move_to_end(snapshot_id)
            return hit[1]
        snap = SessionSnapshot.model_validate(json.loads(row[_META]))
        if row[_STATE] is not None:
            state = SessionState.model_validate(json.loads(row[_STATE]))
            if row[_TAIL] is not None:
                state.messages = self._messages(snapshot_id)  # attached, not re-validated
            snap.state = state
        self._remember(snapshot_id, row[_REV], snap)
        return snap

    def _remember(self, snapshot_id: str, rev: int, snap: SessionSnapshot) -> None:
        self.recent[snapshot_id] = (rev, snap)
        self.recent.move_to_end(snapshot_id)
        if len(self.recent) > _RECENT:
            self.recent.popitem(last=False)

    def _rebase_dependents(self, snapshot_id: str, old: Sequence[Message], new: Sequence[Message]) -> None:
        """Rows built on messages this rewrite drops keep them in their own tail."""
        keep = shared_prefix(list(new), list(old))
        for dep in list(self.dependents.get(snapshot_id, ())):
            row = self.rows[dep]
            if row[_BASE_LEN] <= keep:
                continue
            tail = rebased_tail(old, keep, row[_BASE_LEN], row[_TAIL])
            base_id = snapshot_id if keep else None
            self.rows[dep] = (row[_SEQ], row[_REV] + 1, *row[_SESSION:_BASE], base_id, keep, tail)
            if base_id is None:
                self.dependents[snapshot_id].discard(dep)


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
