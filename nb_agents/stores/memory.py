"""`InMemorySessionStore`: snapshots in a dict, for tests and short demos.

Rows are kept as given (messages are immutable values shared between
snapshots, so a turn costs what it adds, not a copy of the history). A
`threading.Lock` makes each operation atomic across threads and event loops.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ..types import SessionSnapshot
from .base import (
    AuditRecord,
    ResumeClaim,
    SnapshotMutator,
    apply_mutator,
    pending_mutator,
    pick_leaf,
    with_effective_status,
)

__all__ = ["InMemorySessionStore"]


class InMemorySessionStore:
    """A session store that lives as long as the Python process.

    Example:
        >>> store = InMemorySessionStore()
    """

    poll_interval = 0.02

    def __init__(self) -> None:
        self._rows: dict[str, SessionSnapshot] = {}
        self._by_session: dict[str, dict[str, None]] = {}  # an ordered set per session
        self._claims: dict[str, ResumeClaim] = {}
        self._audit: dict[str, list[AuditRecord]] = {}
        self._lock = threading.Lock()

    async def get_snapshot(self, snapshot_id: str) -> SessionSnapshot | None:
        with self._lock:
            return with_effective_status(self._rows.get(snapshot_id))

    async def get_latest(self, session_id: str) -> SessionSnapshot | None:
        with self._lock:
            ids = self._by_session.get(session_id, {})
            return with_effective_status(pick_leaf(self._rows[i] for i in ids))

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
    def _save(self, snapshot_id: str, mutator: SnapshotMutator) -> SessionSnapshot | None:
        new = apply_mutator(snapshot_id, self._rows.get(snapshot_id), mutator)
        if new is None:
            return None
        self._rows[snapshot_id] = new
        if new.session_id:
            self._by_session.setdefault(new.session_id, {})[snapshot_id] = None
        return new

    def _add_audit(self, records: Sequence[AuditRecord]) -> None:
        for rec in records:
            self._audit.setdefault(rec.session_id, []).append(rec)
