"""The session-store protocol and the values every store shares.

A store keeps `SessionSnapshot` rows and owns three atomic operations:

* ``save_snapshot(id, mutator, *, audit=())``: read-modify-write of one row;
  the mutator gets the current row (or None) and returns the new one (or None
  to skip). The `audit` records are appended in the same transaction when the
  row is written, so a turn's final write is one transaction.
* ``claim_resume(snapshot_id, digest, child_id, *, pending=None)``: the
  compare-and-swap that makes resume exactly-once. The first claim of an
  interrupted snapshot wins (and writes `pending` as the child's row, unless
  it has one, in the same transaction); later ones get the winning
  `ResumeClaim` back and write nothing.
* ``release_claim``: drop a claim whose turn was aborted before it wrote
  anything, so the interrupt can be answered again.

Stores also keep the audit trail (`AuditRecord`: who answered which
interrupt, how, when) and list their sessions, for ``agent.pending()``.

`SessionStore` is the protocol the engine calls; any object that satisfies it
is a store. The built-in stores share the rules of the protocol through
`._base.BaseSessionStore`; this module holds the values and the two readings
they have in common: which snapshot is a session's leaf (`pick_leaf`,
`leaves`) and when a pending row reads ``expired`` (`effective_status`).
`nb_agents.testing.stores` checks a store against the whole contract.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from ..types import SessionSnapshot, ToolResume

__all__ = [
    "AuditRecord",
    "Fence",
    "HEARTBEAT_INTERVAL",
    "HEARTBEAT_TIMEOUT",
    "ResumeClaim",
    "SessionStore",
    "Lineage",
    "SnapshotMutator",
    "audit_records",
    "effective_status",
    "leaves",
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


def effective_status(
    snap: SessionSnapshot, *, now: datetime | None = None, timeout: timedelta = HEARTBEAT_TIMEOUT
) -> str:
    """The status as read: a pending row whose heartbeat is older than `timeout` reads ``expired``."""
    status = snap.status or "completed"
    if status == "pending" and snap.heartbeat_at:
        try:
            beat = _parse(snap.heartbeat_at)
        except ValueError:
            return status  # an unreadable heartbeat is not evidence that the worker died
        if beat.tzinfo is None:
            beat = beat.replace(tzinfo=UTC)
        if (now or datetime.now(UTC)) - beat > timeout:
            return "expired"
    return status


# One row of a session's lineage: (snapshot_id, parent_id, created_at).
Lineage = tuple[str, str | None, str | None]


def leaves(lineage: Iterable[Lineage]) -> list[tuple[str, str]]:
    """The leaves of a session: ``(created_at or "", snapshot_id)`` of each row no other names as parent.

    The greatest pair is the session's latest snapshot: the newest, and of
    those created at once, the greatest id (as `str` compares, by code point).

    Example:
        >>> max(leaves([("a", None, "t1"), ("b", "a", "t2"), ("c", "a", "t0")]))
        ('t2', 'b')
    """
    rows = list(lineage)
    parents = {parent for _, parent, _ in rows if parent}
    return [(created or "", snapshot_id) for snapshot_id, _, created in rows if snapshot_id not in parents]


def pick_leaf(snaps: Iterable[SessionSnapshot]) -> SessionSnapshot | None:
    """The leaf of a session: a snapshot no other names as parent; newest wins (see `leaves`)."""
    rows = list(snaps)
    found = max(leaves((s.snapshot_id, s.parent_id, s.created_at) for s in rows), default=None)
    if found is None:
        return None
    return next(s for s in rows if (s.created_at or "", s.snapshot_id) == found)


@dataclass(frozen=True)
class ResumeClaim:
    """Who resumed an interrupted snapshot: the answer's digest, the child, the generation.

    The generation starts at 1 and grows by one each time the claim is
    replaced (a takeover, an explicit retry); a write fenced with an older one
    is refused.
    """

    digest: str
    child_id: str
    generation: int = 1


@dataclass(frozen=True)
class Fence:
    """What a claimed turn's write checks in its transaction: the claim on
    `parent_id` is still `child_id`'s, at `generation`."""

    parent_id: str
    child_id: str
    generation: int


@dataclass(frozen=True)
class AuditRecord:
    """One accepted answer to one interrupt.

    Attributes:
        session_id: The conversation.
        snapshot_id: The interrupted snapshot that was answered.
        child_id: The snapshot of the turn the answer resumed.
        name: The interrupted tool's name.
        ref: The tool call's ref.
        kind: ``"respond"`` or ``"restart"``.
        answer: The respond output, or the restart's ``resumed`` value.
        replaced_input: The new input of a restart that replaced it, else None.
        answered_at: ISO 8601 UTC time.
        answered_by: Who answered: the authenticated principal of the request
            (``context["auth"]["uid"]``) when there is one, else what the caller
            claims (``resume.metadata.answeredBy``, as the notebook sends it).
        claimed_by: What the caller claimed (``resume.metadata.answeredBy``),
            kept apart from the principal.
    """

    session_id: str
    snapshot_id: str
    child_id: str
    name: str
    ref: str | None
    kind: str
    answer: Any
    replaced_input: Any
    answered_at: str
    answered_by: str | None = None
    claimed_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def audit_records(
    resume: ToolResume, session_id: str, parent_id: str, child_id: str, *, principal: str | None = None
) -> list[AuditRecord]:
    """One record per answer in `resume`, which resumed `parent_id` as `child_id` for `principal`."""
    meta = resume.metadata if isinstance(resume.metadata, dict) else {}
    claim = meta.get("answeredBy")
    claim = claim if isinstance(claim, str) else None
    by = principal if principal is not None else claim
    at = now_iso()
    records: list[AuditRecord] = []
    for part in resume.respond:
        if part.tool_response is not None:
            tr = part.tool_response
            records.append(
                AuditRecord(
                    session_id,
                    parent_id,
                    child_id,
                    tr.name,
                    tr.ref,
                    "respond",
                    tr.output,
                    None,
                    at,
                    by,
                    claim,
                )
            )
    for part in resume.restart:
        if part.tool_request is not None:
            rq = part.tool_request
            pmeta = part.metadata or {}
            replaced = rq.input if "replacedInput" in pmeta else None
            records.append(
                AuditRecord(
                    session_id,
                    parent_id,
                    child_id,
                    rq.name,
                    rq.ref,
                    "restart",
                    pmeta.get("resumed"),
                    replaced,
                    at,
                    by,
                    claim,
                )
            )
    return records


@runtime_checkable
class SessionStore(Protocol):
    """Where snapshots live. Every method is atomic on its own.

    Attributes:
        poll_interval: Seconds between reads when a turn waits on another
            (a replayed resume, a background abort).
    """

    poll_interval: float

    async def get_snapshot(self, snapshot_id: str) -> SessionSnapshot | None:
        """The row with this id (``expired`` computed on read), or None."""
        ...

    async def get_latest(self, session_id: str) -> SessionSnapshot | None:
        """The leaf snapshot of a session (see `pick_leaf`), or None."""
        ...

    async def save_snapshot(
        self,
        snapshot_id: str,
        mutator: SnapshotMutator,
        *,
        audit: Sequence[AuditRecord] = (),
        fence: Fence | None = None,
    ) -> SessionSnapshot | None:
        """Atomic read-modify-write of one row; returns what was written.

        `audit` records are appended in the same transaction, when the row is
        written (the mutator did not return None). The mutator runs inside the
        transaction (for SQLite, on the caller's event loop): keep it quick and
        free of I/O. A store may run it again if the transaction had to be retried.
        With a `fence`, the claim it names is checked in the same transaction
        first; if it was replaced, nothing is written and `StaleClaimError` is raised.
        """
        ...

    async def claim_resume(
        self, snapshot_id: str, digest: str, child_id: str, *, pending: SessionSnapshot | None = None
    ) -> ResumeClaim | None:
        """Claim the resume of `snapshot_id`: None if this call won, else the winner.

        A winning call also saves `pending` as the row of `child_id` (its id
        set to `child_id`), unless that row exists, in the same transaction.
        """
        ...

    async def replace_claim(
        self,
        snapshot_id: str,
        expected: ResumeClaim,
        digest: str,
        child_id: str,
        *,
        pending: SessionSnapshot | None = None,
    ) -> ResumeClaim | None:
        """Replace the claim on `snapshot_id` if it is still `expected` (or there is none).

        The winner's claim is ``ResumeClaim(digest, child_id, expected.generation + 1)``
        and `pending` is written as `child_id`'s row (unless it exists) in the same
        transaction; returns None. Otherwise returns the current claim, writing nothing.
        """
        ...

    async def release_claim(self, snapshot_id: str, child_id: str) -> None:
        """Drop the claim made for `child_id` (its turn was aborted before any tool started)."""
        ...

    async def session_ids(self) -> list[str]:
        """Every session id with at least one snapshot."""
        ...

    async def add_audit(self, records: Sequence[AuditRecord]) -> None:
        """Append audit records."""
        ...

    async def audit(self, session_id: str) -> list[AuditRecord]:
        """A session's audit records, oldest first."""
        ...
