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

A store with shortcuts for the writes of an approval cycle (`._sqlite_fast`,
`._pg_fast`) overrides `save_snapshot` and `claim_resume`: its shortcut
answers as the general path would, or says `SLOW` (having written nothing),
and then these run.

A store that does not subclass it (a third-party one) only has to satisfy
the `SessionStore` protocol; `nb_agents.testing.stores` checks either kind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, Concatenate, Final, Generic, ParamSpec, Self, TypedDict, TypeVar

from ..types import SessionSnapshot
from . import _tx
from ._changes import Changes
from ._tx import StoreTransaction, apply_mutator, pending_mutator
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
    "SLOW",
    "WRITE",
    "SaveHow",
    "BaseSessionStore",
    "StoreTransaction",
    "apply_mutator",
    "pending_mutator",
    "with_effective_status",
]

T = TypeVar("T")
P = ParamSpec("P")

READ, WRITE = False, True  # the `write` argument of `_run`


class SaveHow(TypedDict, total=False):
    """`save_snapshot`'s keywords, as a store that overrides it passes them on (see `SessionStore`)."""

    audit: Sequence[AuditRecord]
    fence: Fence | None
    add_rules: Sequence[dict[str, Any]]


SLOW: Final = "slow"  # a shortcut did not apply (or did not hold): the general path runs


Tx = TypeVar("Tx", bound=StoreTransaction)


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

    # -- the protocol ---------------------------------------------------------------
    async def get_snapshot(self, snapshot_id: str) -> SessionSnapshot | None:
        """The row with this id (``expired`` computed on read), or None."""
        return with_effective_status(await self._run(READ, _tx.get, snapshot_id), self.heartbeat_timeout)

    async def get_latest(self, session_id: str) -> SessionSnapshot | None:
        """The session's newest leaf (see `nb_agents.stores.base.leaves`), or None."""
        return with_effective_status(await self._run(READ, _tx.latest, session_id), self.heartbeat_timeout)

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
        written = await self._run(WRITE, _tx.save, snapshot_id, mutator, audit, fence, add_rules)
        if written is not None and not self._changes.quiet:  # wake the row's waiters, if any
            self._changes.notify(snapshot_id)
        return written

    async def claim_resume(
        self, snapshot_id: str, digest: str, child_id: str, *, pending: SessionSnapshot | None = None
    ) -> ResumeClaim | None:
        """Claim the resume of `snapshot_id`: None if this call won, else the current claim."""
        won = await self._run(WRITE, _tx.claim, snapshot_id, ResumeClaim(digest, child_id), pending)
        if won is None and pending is not None and not self._changes.quiet:
            self._changes.notify(child_id)
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
        won = await self._run(WRITE, _tx.replace, snapshot_id, expected, new, pending)
        if won is None and pending is not None and not self._changes.quiet:
            self._changes.notify(child_id)
        return won

    async def release_claim(self, snapshot_id: str, child_id: str) -> None:
        """Drop the claim made for `child_id` (its turn was aborted)."""
        await self._run(WRITE, _tx.release, snapshot_id, child_id)

    async def wait_changed(self, snapshot_id: str, timeout: float) -> None:
        """Until a save of the row through this store (in this process), or `timeout` seconds.

        Returns at once when the row is no longer pending (see `SessionStore.wait_changed`).
        """
        await self._changes.wait(snapshot_id, timeout, lambda: self._run(READ, _tx.settled, snapshot_id))

    def on_change(self, snapshot_id: str, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` on the calling event loop whenever the row may have changed (as
        `wait_changed` wakes), until the returned function is called: a watch without a task."""
        return self._changes.subscribe(snapshot_id, callback)

    async def session_ids(self) -> list[str]:
        """Every session id with at least one snapshot, oldest first."""
        return await self._run(READ, _tx.session_ids)

    async def add_audit(self, records: Sequence[AuditRecord]) -> None:
        """Append audit records."""
        if records:
            await self._run(WRITE, _tx.add_audit, records)

    async def audit(self, session_id: str) -> list[AuditRecord]:
        """A session's audit records, oldest first."""
        return await self._run(READ, _tx.audit, session_id)

    async def get_claim(self, snapshot_id: str) -> ResumeClaim | None:
        """The claim on `snapshot_id`, if any."""
        return await self._run(READ, _tx.find_claim, snapshot_id)

    async def get_rules(self, session_id: str) -> list[dict[str, Any]]:
        """The session's approval rules as they are now, oldest first."""
        return await self._run(READ, _tx.rules, session_id)

    async def drop_rule(
        self, session_id: str, rule_id: str, *, audit: Sequence[AuditRecord] = ()
    ) -> dict[str, Any] | None:
        """Revoke rule `rule_id` of the session (with `audit`, in one transaction); None if it has none."""
        return await self._run(WRITE, _tx.drop_rule, session_id, rule_id, audit)

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
