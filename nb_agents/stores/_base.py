"""`BaseSessionStore`: the rules every built-in store shares, written once.

A store is two things: where its transactions run, and what it does inside
one. A subclass supplies

* a transaction object, `StoreTransaction`: the storage primitives (read a
  row, read it to write it, write it; find, hold, add, swap and drop a
  claim; append and read audit records; a session's leaves; the session
  ids), run inside one transaction and never committing;
* ``_run(write, fn, *args)``: run ``fn(tx, *args)`` in one transaction of its
  own (under a lock, in a worker thread, on a pooled connection), retried as
  the store must, and return what `fn` returned.

This class holds what every store answers alike, on top of those:

* a save runs the mutator on the row as stored; None writes nothing; the
  store owns the id, and a row keeps the session, agent and owner it was
  created with (`apply_mutator`); the audit records of a save are appended
  in its transaction, only when the row is written; a fenced save checks
  the claim first (holding it until it commits) and raises
  `StaleClaimError` without running the mutator when it is not the fence's;
* a save adds the rules its turn made to the session's rules (none twice),
  in the row's transaction; a drop removes one, audited in its transaction;
* the first claim of a snapshot wins (generation 1) and writes the pending
  row of its child (unless that row exists) in the claim's transaction; a
  later claim gets the winner back and writes nothing; a replacement wins
  when the claim is still the expected one (or gone) and makes the next
  generation; only the winner's child releases a claim;
* a session's latest snapshot is its newest leaf (`leaves`);
* a pending row whose heartbeat is older than the store's
  ``heartbeat_timeout`` reads ``expired`` (`effective_status`);
* every committed write of a row wakes the waiters of that row in this
  process (`._changes`); ``wait_changed`` waits there, ``on_change`` calls back.

A store that does not subclass it (a third-party one) only has to satisfy
the `SessionStore` protocol; `nb_agents.testing.stores` checks either kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, Self, TypeVar

from ..errors import StaleClaimError
from ..types import SessionSnapshot
from ._changes import Changes
from .base import (
    HEARTBEAT_TIMEOUT,
    AuditRecord,
    Fence,
    ResumeClaim,
    SnapshotMutator,
    effective_status,
)
from .base import heartbeat_timeout as as_timeout

__all__ = [
    "READ",
    "WRITE",
    "BaseSessionStore",
    "StoreTransaction",
    "apply_mutator",
    "pending_mutator",
    "with_effective_status",
]

T = TypeVar("T")
P = ParamSpec("P")

READ, WRITE = False, True  # the `write` argument of `_run`


class StoreTransaction(Protocol):
    """The storage primitives of a store, inside one of its transactions."""

    def get(self, snapshot_id: str) -> SessionSnapshot | None:
        """The row as stored (``expired`` is the base's reading), or None; a fresh object per call."""
        ...

    def load(self, snapshot_id: str) -> SessionSnapshot | None:
        """As `get`, for a `write` of the same row later in the transaction (lock it, keep what it needs)."""
        ...

    def write(
        self, snapshot_id: str, current: SessionSnapshot | None, new: SessionSnapshot
    ) -> SessionSnapshot:
        """Store `new` as the row `snapshot_id`, which `load` read as `current`; returns the
        row as it reads back (`new`, or `new` with its session's agent and owner)."""
        ...

    def leaves(self, session_id: str) -> Iterable[tuple[str, str]]:
        """``(created_at or "", snapshot_id)`` of each row of the session no row of it names as parent."""
        ...

    def session_ids(self) -> list[str]:
        """Every session id with a row, by its first row's age."""
        ...

    def find_claim(self, snapshot_id: str) -> ResumeClaim | None:
        """The claim on `snapshot_id`, if any."""
        ...

    def hold_claim(self, snapshot_id: str, *, exclusive: bool) -> ResumeClaim | None:
        """As `find_claim`, and no other transaction replaces or drops it until this one ends.

        `exclusive` (before a `swap_claim`) also keeps other holders out; a
        store whose write transactions exclude each other anyway just finds it.
        """
        ...

    def add_claim(self, snapshot_id: str, claim: ResumeClaim) -> None:
        """Record `claim`; `find_claim` found none in this transaction.

        A store whose transactions may not see a claim committed meanwhile
        (Postgres's READ COMMITTED) raises instead, to run the transaction again.
        """
        ...

    def swap_claim(self, snapshot_id: str, old: ResumeClaim, new: ResumeClaim) -> None:
        """Replace `old`, which this transaction holds (`hold_claim`), with `new`."""
        ...

    def drop_claim(self, snapshot_id: str, claim: ResumeClaim) -> None:
        """Delete `claim`, and no other claim of `snapshot_id`."""
        ...

    def add_audit(self, records: Sequence[AuditRecord]) -> None:
        """Append records, in order."""
        ...

    def audit(self, session_id: str) -> list[AuditRecord]:
        """A session's records, oldest first."""
        ...

    def rules(self, session_id: str) -> list[dict[str, Any]]:
        """The session's approval rules, oldest first ([] when it has none)."""
        ...

    def load_rules(self, session_id: str) -> list[dict[str, Any]]:
        """As `rules`, for a `set_rules` later in the transaction (lock them, even when there are none)."""
        ...

    def set_rules(self, session_id: str, rules: list[dict[str, Any]]) -> None:
        """Replace the session's approval rules with `rules` (which may be empty)."""
        ...


Tx = TypeVar("Tx", bound=StoreTransaction)


def apply_mutator(
    snapshot_id: str, current: SessionSnapshot | None, mutator: SnapshotMutator
) -> SessionSnapshot | None:
    """Run a save's mutator with the rules every store shares: the store owns
    the id, and a row keeps the session, agent and owner it was created with."""
    new = mutator(current)
    if new is None:
        return None
    keep: dict[str, str] = {}
    if new.snapshot_id != snapshot_id:
        keep["snapshot_id"] = snapshot_id
    if current is not None:
        for field in ("session_id", "agent", "owner"):
            was = getattr(current, field)
            if was and getattr(new, field) != was:
                keep[field] = was
    return new.model_copy(update=keep) if keep else new


def pending_mutator(pending: SessionSnapshot) -> SnapshotMutator:
    """The save that a winning claim makes: `pending`, unless the row exists."""
    return lambda cur: pending if cur is None else None


def with_effective_status(
    snap: SessionSnapshot | None, timeout: timedelta = HEARTBEAT_TIMEOUT
) -> SessionSnapshot | None:
    """`snap` as read: a stale pending row reads ``expired`` (the stored row stays pending)."""
    if snap is None:
        return None
    status = effective_status(snap, timeout=timeout)
    return snap if status == snap.status else snap.model_copy(update={"status": status})


class BaseSessionStore(Generic[Tx]):
    """A `SessionStore` from a store's transactions and storage primitives.

    Subclasses call ``super().__init__(heartbeat_timeout=...)`` and implement
    `_run` with their `StoreTransaction`, and `close` when they hold
    connections. Every store is a context manager (sync and async) that closes it.

    Attributes:
        poll_interval: Seconds between reads when a turn waits on another.
        heartbeat_timeout: When a pending row with an older heartbeat reads ``expired``.
    """

    poll_interval: float = 0.1
    heartbeat_timeout: timedelta = HEARTBEAT_TIMEOUT

    def __init__(
        self, *, heartbeat_timeout: float | timedelta = HEARTBEAT_TIMEOUT, changes: Changes | None = None
    ) -> None:
        self.heartbeat_timeout = as_timeout(heartbeat_timeout)
        self._changes = changes if changes is not None else Changes()

    @property
    def heartbeat_interval(self) -> timedelta:
        """How often the engine refreshes a running turn's heartbeat: half of `heartbeat_timeout`."""
        return self.heartbeat_timeout / 2

    async def _run(
        self, write: bool, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(tx, *args, **kwargs)`` in one transaction (a write one when `write`)."""
        raise NotImplementedError

    def _changed(self, snapshot_id: str) -> None:
        """A write of the row committed: wake its waiters (a store may also tell other processes)."""
        self._changes.notify(snapshot_id)

    # -- the protocol ---------------------------------------------------------------
    async def get_snapshot(self, snapshot_id: str) -> SessionSnapshot | None:
        """The row with this id (``expired`` computed on read), or None."""
        return with_effective_status(await self._run(READ, _get, snapshot_id), self.heartbeat_timeout)

    async def get_latest(self, session_id: str) -> SessionSnapshot | None:
        """The session's newest leaf (see `nb_agents.stores.base.leaves`), or None."""
        return with_effective_status(await self._run(READ, _latest, session_id), self.heartbeat_timeout)

    async def save_snapshot(
        self,
        snapshot_id: str,
        mutator: SnapshotMutator,
        *,
        audit: Sequence[AuditRecord] = (),
        fence: Fence | None = None,
        add_rules: Sequence[dict[str, Any]] = (),
    ) -> SessionSnapshot | None:
        """Atomic read-modify-write of one row; returns what was written (see `SessionStore`)."""
        written = await self._run(WRITE, _save, snapshot_id, mutator, audit, fence, add_rules)
        if written is not None:
            self._changed(snapshot_id)
        return written

    async def claim_resume(
        self, snapshot_id: str, digest: str, child_id: str, *, pending: SessionSnapshot | None = None
    ) -> ResumeClaim | None:
        """Claim the resume of `snapshot_id`: None if this call won, else the current claim."""
        won = await self._run(WRITE, _claim, snapshot_id, ResumeClaim(digest, child_id), pending)
        if won is None and pending is not None:
            self._changed(child_id)
        return won

    async def replace_claim(
        self,
        snapshot_id: str,
        expected: ResumeClaim,
        digest: str,
        child_id: str,
        *,
        pending: SessionSnapshot | None = None,
    ) -> ResumeClaim | None:
        """Make the claim the next generation if it is still `expected`: None if this call won."""
        new = ResumeClaim(digest, child_id, expected.generation + 1)
        won = await self._run(WRITE, _replace, snapshot_id, expected, new, pending)
        if won is None and pending is not None:
            self._changed(child_id)
        return won

    async def release_claim(self, snapshot_id: str, child_id: str) -> None:
        """Drop the claim made for `child_id` (its turn was aborted)."""
        await self._run(WRITE, _release, snapshot_id, child_id)

    async def wait_changed(self, snapshot_id: str, timeout: float) -> None:
        """Until a save of the row through this store (in this process), or `timeout` seconds.

        Returns at once when the row is no longer pending (see `SessionStore.wait_changed`).
        """
        await self._changes.wait(snapshot_id, timeout, lambda: self._run(READ, _settled, snapshot_id))

    def on_change(self, snapshot_id: str, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` on the calling event loop whenever the row may have changed (as
        `wait_changed` wakes), until the returned function is called: a watch without a task."""
        return self._changes.subscribe(snapshot_id, callback)

    async def session_ids(self) -> list[str]:
        """Every session id with at least one snapshot, oldest first."""
        return await self._run(READ, _session_ids)

    async def add_audit(self, records: Sequence[AuditRecord]) -> None:
        """Append audit records."""
        if records:
            await self._run(WRITE, _add_audit, records)

    async def audit(self, session_id: str) -> list[AuditRecord]:
        """A session's audit records, oldest first."""
        return await self._run(READ, _audit, session_id)

    async def get_claim(self, snapshot_id: str) -> ResumeClaim | None:
        """The claim on `snapshot_id`, if any."""
        return await self._run(READ, _find_claim, snapshot_id)

    async def get_rules(self, session_id: str) -> list[dict[str, Any]]:
        """The session's approval rules as they are now, oldest first."""
        return await self._run(READ, _rules, session_id)

    async def drop_rule(
        self, session_id: str, rule_id: str, *, audit: Sequence[AuditRecord] = ()
    ) -> dict[str, Any] | None:
        """Revoke rule `rule_id` of the session (with `audit`, in one transaction); None if it has none."""
        return await self._run(WRITE, _drop_rule, session_id, rule_id, audit)

    # -- lifecycle --------------------------------------------------------------------
    def close(self) -> None:
        """Close what the store holds open (connections); it opens them again if used again."""

    async def aclose(self) -> None:
        """`close`, from async code."""
        self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


# -- the rules, inside one transaction -------------------------------------------------
def _get(tx: StoreTransaction, snapshot_id: str) -> SessionSnapshot | None:
    return tx.get(snapshot_id)


def _latest(tx: StoreTransaction, session_id: str) -> SessionSnapshot | None:
    found = max(tx.leaves(session_id), default=None)
    return tx.get(found[1]) if found is not None else None


def _settled(tx: StoreTransaction, snapshot_id: str) -> bool:
    row = tx.get(snapshot_id)
    return row is not None and row.status != "pending"


def _save(
    tx: StoreTransaction,
    snapshot_id: str,
    mutator: SnapshotMutator,
    audit: Sequence[AuditRecord],
    fence: Fence | None = None,
    add_rules: Sequence[dict[str, Any]] = (),
) -> SessionSnapshot | None:
    if fence is not None:
        claim = tx.hold_claim(fence.parent_id, exclusive=False)
        if claim is None or (claim.child_id, claim.generation) != (fence.child_id, fence.generation):
            current = (claim.child_id, claim.generation) if claim is not None else None
            raise StaleClaimError.of(fence.parent_id, fence.child_id, fence.generation, current)
    current_row = tx.load(snapshot_id)
    new = apply_mutator(snapshot_id, current_row, mutator)
    if new is None:
        return None
    written = tx.write(snapshot_id, current_row, new)
    if audit:
        tx.add_audit(audit)
    if add_rules and written.session_id:
        rules = tx.load_rules(written.session_id)
        have = {r.get("id") for r in rules}
        added = [dict(r) for r in add_rules if r.get("id") not in have]
        if added:
            tx.set_rules(written.session_id, [*rules, *added])
    return written


def _rules(tx: StoreTransaction, session_id: str) -> list[dict[str, Any]]:
    return tx.rules(session_id)


def _drop_rule(
    tx: StoreTransaction, session_id: str, rule_id: str, audit: Sequence[AuditRecord]
) -> dict[str, Any] | None:
    rules = tx.load_rules(session_id)
    found = next((r for r in rules if r.get("id") == rule_id), None)
    if found is None:
        return None
    tx.set_rules(session_id, [r for r in rules if r is not found])
    if audit:
        tx.add_audit(audit)
    return found


def _find_claim(tx: StoreTransaction, snapshot_id: str) -> ResumeClaim | None:
    return tx.find_claim(snapshot_id)


def _claim(
    tx: StoreTransaction, snapshot_id: str, claim: ResumeClaim, pending: SessionSnapshot | None
) -> ResumeClaim | None:
    won = tx.find_claim(snapshot_id)
    if won is not None:
        return won
    if pending is not None:
        _save(tx, claim.child_id, pending_mutator(pending), ())
    tx.add_claim(snapshot_id, claim)
    return None


def _replace(
    tx: StoreTransaction,
    snapshot_id: str,
    expected: ResumeClaim,
    new: ResumeClaim,
    pending: SessionSnapshot | None,
) -> ResumeClaim | None:
    current = tx.hold_claim(snapshot_id, exclusive=True)  # before the child's row: one lock order
    if current is not None and (current.child_id, current.generation) != (
        expected.child_id,
        expected.generation,
    ):
        return current
    if pending is not None:
        _save(tx, new.child_id, pending_mutator(pending), ())
    if current is None:
        tx.add_claim(snapshot_id, new)
    else:
        tx.swap_claim(snapshot_id, current, new)
    return None


def _release(tx: StoreTransaction, snapshot_id: str, child_id: str) -> None:
    claim = tx.find_claim(snapshot_id)
    if claim is not None and claim.child_id == child_id:
        tx.drop_claim(snapshot_id, claim)


def _session_ids(tx: StoreTransaction) -> list[str]:
    return tx.session_ids()


def _add_audit(tx: StoreTransaction, records: Sequence[AuditRecord]) -> None:
    tx.add_audit(records)


def _audit(tx: StoreTransaction, session_id: str) -> list[AuditRecord]:
    return tx.audit(session_id)
