"""Per-session approval rules in the store: reading a session's rules, and revoking one.

A session's rules (made by ``approve(always=True)``) are kept per session by
the store, not per snapshot: a turn reads them as they are when it decides
(`decision.decide`), whichever snapshot it continues from, so a revoked rule
stays revoked for a stale tab's chat too. A revoke is one store write, with
its ``rule-revoked`` audit record in the same transaction.
"""

from __future__ import annotations

from typing import Any

from ..errors import NotFoundError
from ..rules import SessionRule
from ..stores.base import AuditRecord, SessionStore, now_iso
from ..types import SessionSnapshot
from .limits import check_id
from .ownership import Action, principal_of, visible
from .spec import AgentSpec

__all__ = ["revoke_session_rule", "session_rules"]


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
    return [SessionRule.from_dict(r) for r in await store.get_rules(session_id)]


async def revoke_session_rule(
    spec: AgentSpec, store: SessionStore, session_id: str, rule_id: str, context: dict[str, Any] | None
) -> SessionRule:
    """Drop `rule_id` from the session's rules, audited as ``rule-revoked`` in the same write."""
    check_id(session_id, "session_id")
    leaf = await store.get_latest(session_id)
    if leaf is None or not _may(spec, leaf, context, "resume"):
        raise NotFoundError(f"Session {session_id} not found.")
    rules = await store.get_rules(session_id)
    found = next((r for r in rules if r.get("id") == rule_id), None)
    if found is None:
        known = ", ".join(str(r.get("id")) for r in rules) or "none"
        raise NotFoundError(f"Session {session_id} has no approval rule {rule_id!r} (its rules: {known}).")
    where = str(found.get("snapshotId") or leaf.snapshot_id)
    record = AuditRecord(
        session_id,
        where,
        where,
        str(found.get("tool")),
        found.get("ref"),
        "rule-revoked",
        {"rule": rule_id, "action": found.get("action", "allow")},
        None,
        now_iso(),
        principal_of(context),
    )
    dropped = await store.drop_rule(session_id, rule_id, audit=[record])
    if dropped is None:
        raise NotFoundError(f"Session {session_id} has no approval rule {rule_id!r} (it was revoked).")
    return SessionRule.from_dict(dropped)
