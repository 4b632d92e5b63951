"""What one store transaction does: `StoreTransaction`, the storage primitives a store
supplies, and the rules `BaseSessionStore` keeps, each a function of one transaction
(see `nb_agents.stores._base` for the rules in words).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from ..errors import StaleClaimError
from ..types import SessionSnapshot
from .base import AuditRecord, Fence, ResumeClaim, SnapshotMutator

__all__ = [
    "StoreTransaction",
    "add_audit",
    "apply_mutator",
    "audit",
    "claim",
    "drop_rule",
    "find_claim",
    "get",
    "latest",
    "pending_mutator",
    "release",
    "replace",
    "rules",
    "save",
    "session_ids",
    "settled",
]


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


# -- the rules, inside one transaction -------------------------------------------------
def get(tx: StoreTransaction, snapshot_id: str) -> SessionSnapshot | None:
    return tx.get(snapshot_id)


def latest(tx: StoreTransaction, session_id: str) -> SessionSnapshot | None:
    found = max(tx.leaves(session_id), default=None)
    return tx.get(found[1]) if found is not None else None


def settled(tx: StoreTransaction, snapshot_id: str) -> bool:
    row = tx.get(snapshot_id)
    return row is not None and row.status != "pending"


def save(
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


def rules(tx: StoreTransaction, session_id: str) -> list[dict[str, Any]]:
    return tx.rules(session_id)


def drop_rule(
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


def find_claim(tx: StoreTransaction, snapshot_id: str) -> ResumeClaim | None:
    return tx.find_claim(snapshot_id)


def claim(
    tx: StoreTransaction, snapshot_id: str, claim: ResumeClaim, pending: SessionSnapshot | None
) -> ResumeClaim | None:
    won = tx.find_claim(snapshot_id)
    if won is not None:
        return won
    if pending is not None:
        save(tx, claim.child_id, pending_mutator(pending), ())
    tx.add_claim(snapshot_id, claim)
    return None


def replace(
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
        save(tx, new.child_id, pending_mutator(pending), ())
    if current is None:
        tx.add_claim(snapshot_id, new)
    else:
        tx.swap_claim(snapshot_id, current, new)
    return None


def release(tx: StoreTransaction, snapshot_id: str, child_id: str) -> None:
    claim = tx.find_claim(snapshot_id)
    if claim is not None and claim.child_id == child_id:
        tx.drop_claim(snapshot_id, claim)


def session_ids(tx: StoreTransaction) -> list[str]:
    return tx.session_ids()


def add_audit(tx: StoreTransaction, records: Sequence[AuditRecord]) -> None:
    tx.add_audit(records)


def audit(tx: StoreTransaction, session_id: str) -> list[AuditRecord]:
    return tx.audit(session_id)
