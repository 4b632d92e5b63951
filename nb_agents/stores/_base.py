"""`BaseSessionStore`: the rules every built-in store shares, written once.

A store is two things: where its transactions run, and what it does inside
one. A subclass supplies

* a transaction object, `StoreTransaction`: the storage primitives (read a
  row, read it to write it, write it; find, add and drop a claim; append and
  read audit records; a session's leaves; the session ids), run inside one
  transaction and never committing;
* ``_run(write, fn, *args)``: run ``fn(tx, *args)`` in one transaction of its
  own (under a lock, in a worker thread, on a pooled connection), retried as
  the store must, and return what `fn` returned.

This class holds what every store answers alike, on top of those:

* a save runs the mutator on the row as stored; None writes nothing; the
  store owns the id, and a row keeps the session it was created in
  (`apply_mutator`); the audit records of a save are appended in its
  transaction, only when the row is written;
* the first claim of a snapshot wins and writes the pending row of its child
  (unless that row exists) in the claim's transaction; a later claim gets the
  winner back and writes nothing; only the winner's child releases a claim;
* a session's latest snapshot is its newest leaf (`leaves`);
* a pending row whose heartbeat is older than the store's ``heartbeat_timeout``
  reads ``expired`` (`effective_status`);
* a claim has a generation: `replace_claim` swaps a claim that is still the
  expected one for the next generation, and a save fenced with a replaced
  generation writes nothing and raises `StaleClaimError`;
* `wait_changed` sleeps a poll interval (a store that can be told of changes,
  PostgreSQL by ``NOTIFY``, wakes its waiters sooner).

A store that does not subclass it (a third-party one) only has to satisfy
the `SessionStore` protocol; `nb_agents.testing.stores` checks either kind.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Concatenate, Generic, ParamSpec, Protocol, Self, TypeVar

from ..errors import StaleClaimError
from ..types import SessionSnapshot
from .base import HEARTBEAT_TIMEOUT, AuditRecord, Fence, ResumeClaim, SnapshotMutator, effective_status

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

    def write(self, snapshot_id: str, current: SessionSnapshot | None, new: SessionSnapshot) -> None:
        """Store `new` as the row `snapshot_id`, which `load` read as `current`."""
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

    def add_claim(self, snapshot_id: str, claim: ResumeClaim) -> None:
        """Record `claim`; `find_claim` found none in this transaction.

        A store whose transactions may not see a claim committed meanwhile
        (Postgres's READ COMMITTED) raises instead, to run the transaction again.
        """
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


Tx = TypeVar("Tx", bound=StoreTransaction)


def apply_mutator(
    snapshot_id: str, current: SessionSnapshot | None, mutator: SnapshotMutator
) -> SessionSnapshot | None:
    """Run a save's mutator with the rules every store shares: the store owns
    the id, and a row keeps the session it was created in."""
    new = mutator(current)
    if new is None:
        return None
    if new.snapshot_id != snapshot_id:
        new = new.model_copy(update={"snapshot_id": snapshot_id})
    if current is not None and current.session_id and new.session_id != current.session_id:
        new = new.model_copy(update={"session_id": current.session_id})
    return new


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

    Subclasses implement `_run` with their `StoreTransaction`, and `close`
    when they hold connections. Every store is a context manager (sync and
    async) that closes it.

    Attributes:
        poll_interval: Seconds between reads when a turn waits on another.
        heartbeat_timeout: How old a pending row's heartbeat may be before the
            row reads ``expired`` (and its claim may be taken over).
        heartbeat_interval: How often a running turn refreshes it (half the timeout).
    """

    poll_interval: float = 0.1
    heartbeat_timeout: timedelta = HEARTBEAT_TIMEOUT

    @property
    def heartbeat_interval(self) -> timedelta:
        return self.heartbeat_timeout / 2

    def _set_heartbeat(self, timeout: float | timedelta | None) -> None:
        """For a constructor's ``heartbeat_timeout=`` (seconds or a timedelta; None keeps 60 s)."""
        if timeout is None:
            return
        value = timeout if isinstance(timeout, timedelta) else timedelta(seconds=timeout)
        if value <= timedelta(0):
            raise ValueError(f"heartbeat_timeout must be positive, got {timeout!r}")
        self.heartbeat_timeout = value

    async def _run(
        self, write: bool, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(tx, *args, **kwargs)`` in one transaction (a write one when `write`)."""
        raise NotImplementedError

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
    ) -> SessionSnapshot | None:
        """Atomic read-modify-write of one row; returns what was written (see `SessionStore`)."""
        if fence is None:
            return await self._run(WRITE, _save, snapshot_id, mutator, audit)
        return await self._run(WRITE, _fenced_save, snapshot_id, mutator, audit, fence)

    async def claim_resume(
        self, snapshot_id: str, digest: str, child_id: str, *, pending: SessionSnapshot | None = None
    ) -> ResumeClaim | None:
        """Claim the resume of `snapshot_id`: None if this call won, else the winner."""
        return await self._run(WRITE, _claim, snapshot_id, ResumeClaim(digest, child_id), pending)

    async def replace_claim(
        self,
        snapshot_id: str,
        expected: ResumeClaim,
        digest: str,
        child_id: str,
        *,
        pending: SessionSnapshot | None = None,
    ) -> ResumeClaim | None:
        """Swap the claim for the next generation if it is still `expected` (see `SessionStore`)."""
        new = ResumeClaim(digest, child_id, expected.generation + 1)
        return await self._run(WRITE, _replace, snapshot_id, expected, new, pending)

    async def wait_changed(self, snapshot_id: str, timeout: float) -> None:
        """Return when the row may have changed, or after `timeout` seconds (here: a poll interval)."""
        await asyncio.sleep(max(0.0, min(timeout, self.poll_interval)))

    async def release_claim(self, snapshot_id: str, child_id: str) -> None:
        """Drop the claim made for `child_id` (its turn was aborted)."""
        await self._run(WRITE, _release, snapshot_id, child_id)

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


def _save(
    tx: StoreTransaction, snapshot_id: str, mutator: SnapshotMutator, audit: Sequence[AuditRecord]
) -> SessionSnapshot | None:
    current = tx.load(snapshot_id)
    new = apply_mutator(snapshot_id, current, mutator)
    if new is None:
        return None
    tx.write(snapshot_id, current, new)
    if audit:
        tx.add_audit(audit)
    return new


def _fenced_save(
    tx: StoreTransaction,
    snapshot_id: str,
    mutator: SnapshotMutator,
    audit: Sequence[AuditRecord],
    fence: Fence,
) -> SessionSnapshot | None:
    held = tx.find_claim(fence.parent_id)
    if held is None or held.child_id != fence.child_id or held.generation != fence.generation:
        now = f"generation {held.generation}, turn {held.child_id}" if held is not None else "no claim"
        raise StaleClaimError(
            f"the claim on snapshot {fence.parent_id} is no longer turn {fence.child_id}'s "
            f"(generation {fence.generation}); it holds {now}: turn {snapshot_id}'s write is refused"
        )
    return _save(tx, snapshot_id, mutator, audit)


def _replace(
    tx: StoreTransaction,
    snapshot_id: str,
    expected: ResumeClaim,
    new: ResumeClaim,
    pending: SessionSnapshot | None,
) -> ResumeClaim | None:
    held = tx.find_claim(snapshot_id)
    if held is not None and (held.child_id, held.generation) != (expected.child_id, expected.generation):
        return held
    if held is not None:
        tx.drop_claim(snapshot_id, held)
    if pending is not None:
        _save(tx, new.child_id, pending_mutator(pending), ())
    tx.add_claim(snapshot_id, new)
    return None


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
