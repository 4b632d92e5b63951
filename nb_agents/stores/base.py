"""The session-store protocol and the rules every store shares.

A store keeps `SessionSnapshot` rows and owns three atomic operations:

* ``save_snapshot(id, mutator)``: read-modify-write of one row; the mutator
  gets the current row (or None) and returns the new one (or None to skip).
* ``claim_resume(snapshot_id, digest, child_id)``: the compare-and-swap that
  makes resume exactly-once. The first claim of an interrupted snapshot wins;
  later ones get the winning `ResumeClaim` back.
* ``release_claim``: drop a claim whose turn failed, so the interrupt can be
  answered again.

Leaf selection for a session id (`pick_leaf`) and the ``expired`` reading of a
stale pending row (`effective_status`) are shared here, so every store
answers alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

from ..types import SessionSnapshot

__all__ = [
    "HEARTBEAT_INTERVAL",
    "HEARTBEAT_TIMEOUT",
    "ResumeClaim",
    "SessionStore",
    "SnapshotMutator",
    "effective_status",
    "now_iso",
    "pick_leaf",
]

HEARTBEAT_INTERVAL = timedelta(seconds=30)
HEARTBEAT_TIMEOUT = timedelta(seconds=60)

SnapshotMutator = Callable[[SessionSnapshot | None], SessionSnapshot | None]


def now_iso() -> str:
    """The current UTC time as ISO 8601 with milliseconds and a ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def effective_status(snap: SessionSnapshot, *, now: datetime | None = None) -> str:
    """The status as read: a pending row with a stale heartbeat reads ``expired``."""
    status = snap.status or "completed"
    if status == "pending" and snap.heartbeat_at:
        if (now or datetime.now(UTC)) - _parse(snap.heartbeat_at) > HEARTBEAT_TIMEOUT:
            return "expired"
    return status


def with_effective_status(snap: SessionSnapshot | None) -> SessionSnapshot | None:
    if snap is None:
        return None
    status = effective_status(snap)
    return snap if status == snap.status else snap.model_copy(update={"status": status})


def pick_leaf(snaps: Iterable[SessionSnapshot]) -> SessionSnapshot | None:
    """The leaf of a session: a snapshot no other names as parent; newest wins."""
    rows = list(snaps)
    parents = {s.parent_id for s in rows if s.parent_id}
    leaves = [s for s in rows if s.snapshot_id not in parents]
    if not leaves:
        return None
    return max(leaves, key=lambda s: (s.created_at or "", s.snapshot_id))


@dataclass(frozen=True)
class ResumeClaim:
    """Who resumed an interrupted snapshot: the answer's digest and the child."""

    digest: str
    child_id: str


@runtime_checkable
class SessionStore(Protocol):
    """Where snapshots live. Every method is atomic on its own."""

    async def get_snapshot(self, snapshot_id: str) -> SessionSnapshot | None:
        """The row with this id (``expired`` computed on read), or None."""
        ...

    async def get_latest(self, session_id: str) -> SessionSnapshot | None:
        """The leaf snapshot of a session (see `pick_leaf`), or None."""
        ...

    async def save_snapshot(self, snapshot_id: str, mutator: SnapshotMutator) -> SessionSnapshot | None:
        """Atomic read-modify-write of one row; returns what was written."""
        ...

    async def claim_resume(self, snapshot_id: str, digest: str, child_id: str) -> ResumeClaim | None:
        """Claim the resume of `snapshot_id`: None if this call won, else the winner."""
        ...

    async def release_claim(self, snapshot_id: str, child_id: str) -> None:
        """Drop the claim made for `child_id` (its turn failed before finishing)."""
        ...
