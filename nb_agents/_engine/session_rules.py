"""Per-session approval rules in the store: reading a session's rules, and revoking one.

A session's rules (made by ``approve(always=True)``) live in its snapshots: each
row carries its parent's rules forward, plus those its own turn made, and a
store keeps a row from carrying forward a rule its parent lost meanwhile
(`stores._base`). The session's rules are those of the snapshot its next turn
continues from (`walk_back` of the latest).
"""

from __future__ import annotations

from typing import Any

from ..errors import FailedPreconditionError, NotFoundError
from ..rules import SessionRule
from ..stores.base import AuditRecord, SessionStore, now_iso
from ..types import SessionSnapshot
from .limits import check_id
from .loading import walk_back
from .ownership import Action, principal_of, visible
from .spec import AgentSpec

__all__ = ["revoke_session_rule", "session_rules"]

_REVOKE_PASSES = 8  # rows a revoke follows past the one it wrote (turns that raced it)


def _may(spec: AgentSpec, snap: SessionSnapshot, context: dict[str, Any] | None, action: Action) -> bool:
    return context is None or visible(
        snap, agent=spec.name, context=context, action=action, authorize=spec.authorize
    )


async def session_rules(
    spec: AgentSpec, store: SessionStore, session_id: str, context: dict[str, Any] | None
) -> list[SessionRule]:
    """The session's rules, oldest first; none for a session the caller may not read."""
    check_id(session_id, "session_id")
    leaf = await store.get_latest(session_id)
    if leaf is None or not _may(spec, leaf, context, "read"):
        return []
    snap = await walk_back(store, session_id, leaf)
    return [SessionRule.from_dict(r) for r in (snap.rules or [] if snap is not None else [])]


async def revoke_session_rule(
    spec: AgentSpec, store: SessionStore, session_id: str, rule_id: str, context: dict[str, Any] | None
) -> SessionRule:
    """Drop `rule_id` from the session's latest rules, audited as ``rule-revoked`` in the same write."""
    check_id(session_id, "session_id")
    leaf = await store.get_latest(session_id)
    if leaf is None or not _may(spec, leaf, context, "resume"):
        raise NotFoundError(f"Session {session_id} not found.")
    if leaf.status in ("pending", "aborting"):
        raise FailedPreconditionError(
            f"a turn of session {session_id} is running (snapshot {leaf.snapshot_id}); "
            "revoke the rule when it has ended"
        )
    snap = await walk_back(store, session_id, leaf)
    rules = snap.rules or [] if snap is not None else []
    found = next((r for r in rules if r.get("id") == rule_id), None)
    if snap is None or found is None:
        known = ", ".join(str(r.get("id")) for r in rules) or "none"
        raise NotFoundError(f"Session {session_id} has no approval rule {rule_id!r} (its rules: {known}).")
    record = AuditRecord(
        session_id,
        snap.snapshot_id,
        snap.snapshot_id,
        str(found.get("tool")),
        found.get("ref"),
        "rule-revoked",
        {"rule": rule_id, "action": found.get("action", "allow")},
        None,
        now_iso(),
        principal_of(context),
    )

    def mutate(cur: SessionSnapshot | None) -> SessionSnapshot | None:
        if cur is None or not any(r.get("id") == rule_id for r in cur.rules or []):
            return None  # revoked meanwhile: nothing to write, nothing to audit
        kept = [r for r in cur.rules or [] if r.get("id") != rule_id]
        return cur.model_copy(update={"rules": kept or None})

    if await store.save_snapshot(snap.snapshot_id, mutate, audit=[record]) is None:
        raise NotFoundError(f"Session {session_id} has no approval rule {rule_id!r} (it was revoked).")
    # A turn that began before the revoke carries the rule forward from the row revoked here.
    # Its final write reads that row locked, so it sees the revoke, unless it committed first:
    # then it is the session's latest row now, and the rule is revoked there too.
    for _ in range(_REVOKE_PASSES):
        leaf = await store.get_latest(session_id)
        latest = await walk_back(store, session_id, leaf) if leaf is not None else None
        if latest is None or not any(r.get("id") == rule_id for r in latest.rules or []):
            break
        await store.save_snapshot(latest.snapshot_id, mutate)
    return SessionRule.from_dict(found)
