"""The session-store protocol and the values every store shares.

A store keeps `SessionSnapshot` rows and owns these atomic operations:

* ``save_snapshot(id, mutator, *, audit=(), fence=None)``: read-modify-write
  of one row; the mutator gets the current row (or None) and returns the new
  one (or None to skip). The `audit` records are appended in the same
  transaction when the row is written, so a turn's final write is one
  transaction. With a `Fence`, the save first checks, in that transaction,
  that the claim it was made under still stands (else `StaleClaimError`,
  and nothing is written).
* ``claim_resume(snapshot_id, digest, child_id, *, pending=None)``: the
  compare-and-swap that makes resume exactly-once. The first claim of an
  interrupted snapshot wins (generation 1; it writes `pending` as the
  child's row, unless it has one, in the same transaction); later ones get
  the winning `ResumeClaim` back and write nothing.
* ``replace_claim(snapshot_id, expected, digest, child_id, *, pending=None)``:
  a compare-and-swap of the claim itself, for a takeover (the claimant's
  heartbeat expired) or an explicit retry: the claim becomes the next
  generation, which fences out every write made under the one it replaced.
* ``release_claim``: drop a claim whose turn was aborted before it wrote
  anything, so the interrupt can be answered again.
* ``wait_changed(snapshot_id, timeout)``: sleep until the row may have
  changed, so a running turn notices an abort without polling.
* a session's approval rules (made by ``approve(always=True)``): kept per
  session, not per row, so a rule is what it is *now* whichever snapshot a
  turn continues from. A save adds the rules its turn made (``add_rules``),
  in the row's transaction; ``drop_rule`` revokes one; ``get_rules`` reads them.

Stores also keep the audit trail (`AuditRecord`: who answered which
interrupt, how, when) and list their sessions, for ``agent.pending()``. A
store's ``heartbeat_timeout`` says when a pending row whose worker stopped
beating reads ``expired``; the engine beats every ``heartbeat_interval``
(half of it).

`SessionStore` is the protocol the engine calls; any object that satisfies it
is a store. The built-in stores share the rules of the protocol through
`._base.BaseSessionStore`; this module holds the values and the readings
they have in common: which snapshot is a session's leaf (`pick_leaf`,
`leaves`) and when a pending row reads ``expired`` (`effective_status`).
`nb_agents.testing.stores` checks a store against the whole contract.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from ..errors import AbortedError, StaleClaimError
from ..types import SessionSnapshot

__all__ = [
    "ANSWER_KINDS",
    "AuditRecord",
    "Fence",
    "HEARTBEAT_INTERVAL",
    "HEARTBEAT_TIMEOUT",
    "Lineage",
    "ResumeClaim",
    "SessionStore",
    "SnapshotMutator",
    "StaleClaimError",
    "effective_status",
    "heartbeat_timeout",
    "leaves",
    "now_iso",
    "pick_leaf",
]

# The defaults: a store's own `heartbeat_timeout` (and its half, the interval) override them.
HEARTBEAT_INTERVAL = timedelta(seconds=30)
HEARTBEAT_TIMEOUT = timedelta(seconds=60)

SnapshotMutator = Callable[[SessionSnapshot | None], SessionSnapshot | None]


class ReadAgainError(AbortedError):
    """A claim found the row it claims changed since a store answered its read from a copy.

    A store may answer the read of a resume that claims the row next (its
    ``get_snapshot_to_claim``, in the same task) from what it wrote or read
    itself, and have the claim check that the row is still that one. When it
    is not, the claim writes nothing and raises this: read the row again (the
    store then reads it from the database) and decide on it as it is now.
    """


def now_iso() -> str:
    """The current UTC time as ISO 8601 with milliseconds and a ``Z`` (a repeat in the same ms: kept)."""
    global _NOW
    ms, last = time.time_ns() // 1_000_000, _NOW
    if last[0] != ms:
        t = time.gmtime(ms // 1000)
        text = f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
        last = _NOW = (ms, f"{text}.{ms % 1000:03d}Z")
    return last[1]


_NOW = (-1, "")  # (a millisecond, its text): a turn stamps several; one tuple, swapped whole


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def heartbeat_timeout(value: float | timedelta) -> timedelta:
    """A store's ``heartbeat_timeout`` argument (seconds, or a `timedelta`) as a positive `timedelta`.

    Example:
        >>> heartbeat_timeout(5)
        datetime.timedelta(seconds=5)
    """
    timeout = value if isinstance(value, timedelta) else timedelta(seconds=value)
    if not timeout > timedelta(0):
        raise ValueError(f"heartbeat_timeout must be positive, got {value!r}")
    return timeout


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
    """Who resumed an interrupted snapshot: the answer's digest, the child, and the generation.

    A first claim is generation 1; each `SessionStore.replace_claim` that wins
    makes the next one, so a worker that was taken over can tell (and be told,
    by a `Fence`) that its claim is no longer the current one.
    """

    digest: str
    child_id: str
    generation: int = 1


@dataclass(frozen=True)
class Fence:
    """What a fenced save checks: the claim on `parent_id` is still ``(child_id, generation)``.

    Example:
        >>> Fence("paused-snapshot", "its-resume", 2)
        Fence(parent_id='paused-snapshot', child_id='its-resume', generation=2)
    """

    parent_id: str
    child_id: str
    generation: int

    @classmethod
    def of(cls, parent_id: str, claim: ResumeClaim) -> Fence:
        """The fence of the writes made under `claim`, the claim on `parent_id`."""
        return cls(parent_id, claim.child_id, claim.generation)


ANSWER_KINDS = ("respond", "restart", "cancel", "expired")
"""The `AuditRecord` kinds that answered a call (the others record rules made or revoked)."""


@dataclass(frozen=True)
class AuditRecord:
    """One decision about one tool call: an accepted answer, a rule, a deadline's default.

    Attributes:
        session_id: The conversation.
        snapshot_id: The interrupted snapshot that was answered.
        child_id: The snapshot of the turn the answer resumed.
        name: The interrupted tool's name.
        ref: The tool call's ref.
        kind: ``"respond"``, ``"restart"``, ``"cancel"`` (the person abandoned the
            call: it did not run), or ``"expired"``: nobody answered before the
            deadline and the declared default was applied.
        answer: The respond output, or the restart's ``resumed`` value; for ``"expired"``,
            ``{"at": <deadline>, "applied": {"deny": msg} | {"respond": output} | {"approve": true}}``.
        replaced_input: The new input of a restart that replaced it, else None.
        answered_at: ISO 8601 UTC time.
        answered_by: Who answered, when known: the authenticated principal
            when there is one (else what the client claimed).
        claimed_by: What the client claimed (``resume.metadata.answeredBy``),
            kept apart from `answered_by`.
        decision: Who decided: ``"person"`` (an answer, by `answered_by`),
            ``"rule"`` (an approval rule), ``"expiry"`` (a deadline's default),
            ``"policy"`` (the agent's own configuration); None in records of
            rules made or revoked, and in records written before decisions were named.
        input: The exact input the call ran with, when the decision let it run
            (after an edit, the edited one); None when nothing ran.
        requested_by: The principal whose session it is (who asked the agent),
            when known: with an approver answering, ``answered_by`` is the
            approver and this the requester. None in records written before it was kept.
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
    decision: str | None = None
    input: Any = None
    requested_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class SessionStore(Protocol):
    """Where snapshots live. Every method is atomic on its own.

    Attributes:
        poll_interval: Seconds between reads when a turn waits on another
            (a replayed resume, a background abort) and the store cannot say
            when a row changed.
        heartbeat_timeout: How old a pending row's heartbeat may get before
            the row reads ``expired`` (its worker is presumed dead and its
            claim may be taken over). The built-in stores take it as a
            constructor argument (default `HEARTBEAT_TIMEOUT`, 60 s).
        heartbeat_interval: How often the engine refreshes the heartbeat of
            a running turn: half of `heartbeat_timeout`.
    """

    poll_interval: float

    @property
    def heartbeat_timeout(self) -> timedelta: ...

    @property
    def heartbeat_interval(self) -> timedelta: ...

    async def get_snapshot(self, snapshot_id: str) -> SessionSnapshot | None:
        """The row with this id (``expired`` computed on read, by `heartbeat_timeout`), or None."""
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
        add_rules: Sequence[dict[str, Any]] = (),
    ) -> SessionSnapshot | None:
        """Atomic read-modify-write of one row; returns what was written.

        `audit` records are appended in the same transaction, when the row is
        written (the mutator did not return None), and so are `add_rules`
        added to the row's session's rules (one whose ``id`` the session has
        already is not added again). The mutator runs inside the
        transaction (for SQLite, on the caller's event loop): keep it quick and
        free of I/O. A store may run it again if the transaction had to be retried.

        The store owns the id, and a row keeps the session it was created in;
        it also keeps the ``agent`` and ``owner`` it was written with first
        (a store may keep them per session: then every row of a session reads
        the session's).

        With a `fence`, the save is one made under a claim: in the same
        transaction, before the mutator runs, the store checks that the claim
        on ``fence.parent_id`` is still ``(fence.child_id, fence.generation)``.
        If it is not (it was replaced, released, or never made), the save
        writes nothing, neither the row nor `audit`, and raises
        `StaleClaimError`. Without one, nothing is checked.
        """
        ...

    async def claim_resume(
        self, snapshot_id: str, digest: str, child_id: str, *, pending: SessionSnapshot | None = None
    ) -> ResumeClaim | None:
        """Claim the resume of `snapshot_id`: None if this call won, else the current claim.

        A winning call makes ``ResumeClaim(digest, child_id, 1)`` and saves
        `pending` as the row of `child_id` (its id set to `child_id`), unless
        that row exists, in the same transaction.
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
        """Replace the claim on `snapshot_id` if it is still `expected`: None if this call won.

        A compare-and-swap in one transaction: when the current claim has
        `expected`'s ``child_id`` and ``generation`` (its digest is not
        compared), or there is no claim at all, it becomes
        ``ResumeClaim(digest, child_id, expected.generation + 1)`` and
        `pending` is saved as the row of `child_id` unless that row exists.
        Otherwise the current claim is returned and nothing is written. Of
        concurrent calls with the same `expected`, one wins.

        For a takeover of a claim whose worker's heartbeat expired, and for
        an explicit retry of an attempt that failed or was aborted; writes
        fenced with the replaced generation are refused from then on.
        """
        ...

    async def release_claim(self, snapshot_id: str, child_id: str) -> None:
        """Drop the claim made for `child_id` (its turn was aborted before it wrote anything)."""
        ...

    async def wait_changed(self, snapshot_id: str, timeout: float) -> None:
        """Return when the row may have changed, or after `timeout` seconds, whichever comes first.

        Spurious returns are allowed: the caller reads the row again. A save
        of the row through this store object (in this process) returns it at
        once; whether a save from elsewhere does is the store's to say
        (PostgreSQL: a save that ends the pending row's run, such as an
        abort, by LISTEN/NOTIFY; SQLite and files: only by the timeout). A
        change that committed just before the call is not lost: if the row
        exists and its stored status is no longer ``pending``, the call
        returns without waiting.
        """
        ...

    async def session_ids(self) -> list[str]:
        """Every session id with at least one snapshot."""
        ...

    async def get_claim(self, snapshot_id: str) -> ResumeClaim | None:
        """The claim on `snapshot_id`, if any (who resumed it, under which generation)."""
        ...

    async def get_rules(self, session_id: str) -> list[dict[str, Any]]:
        """The session's approval rules as they are now, oldest first (dicts with ``id``, ``tool``, ...)."""
        ...

    async def drop_rule(
        self, session_id: str, rule_id: str, *, audit: Sequence[AuditRecord] = ()
    ) -> dict[str, Any] | None:
        """Revoke the session's rule `rule_id`: the rule as it was, or None if it has none by that id.

        `audit` is appended in the same transaction, only when a rule was dropped.
        """
        ...

    async def add_audit(self, records: Sequence[AuditRecord]) -> None:
        """Append audit records."""
        ...

    async def audit(self, session_id: str) -> list[AuditRecord]:
        """A session's audit records, oldest first."""
        ...
