"""What approval rules add to a turn's audit, and the check that a rule can be kept at all.

A turn's audit holds the answers it ran on (`stores.base.audit_records`) and,
from the rules: one ``"rule"`` record per call a rule answered, and one
``"rule-created"`` record per per-session rule the turn made (an
``approve(always=True)`` answer). The records go in with the turn's final row,
in its one write, so a rule is stored exactly when its answer is.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from ..rules import always_asked
from ..session import Session
from ..stores.base import AuditRecord, audit_records, now_iso
from ..types import ToolResume

__all__ = ["asks_rule", "turn_audit"]


def asks_rule(resume: ToolResume) -> bool:
    """Whether `resume` approves a call with ``always=True`` (it asks for a per-session rule)."""
    return any(always_asked((p.metadata or {}).get("resumed")) for p in resume.restart)


def turn_audit(
    session: Session,
    resume: ToolResume | None,
    parent_id: str | None,
    child: str,
    *,
    principal: str | None,
    rules_before: Collection[Any],
    by_rule: Sequence[dict[str, Any]],
) -> list[AuditRecord]:
    """The audit records of a turn; the rules it made get their ``createdAt``, ``createdBy``, ``snapshotId``.

    Args:
        session: The turn's session (its ``rules`` as they are now).
        resume: The answer the turn ran on, if any (with `parent_id`, the snapshot it answered).
        child: The turn's own snapshot.
        principal: The authenticated caller, when there is one.
        rules_before: The ids of the session's rules when the turn began.
        by_rule: The calls rules answered: ``{"name", "ref", "rule", "action"}``.
    """
    records: list[AuditRecord] = []
    if resume is not None and parent_id is not None:
        records = audit_records(resume, session.session_id, parent_id, child, principal=principal)
    at = now_iso()
    by = records[0].answered_by if records else principal
    claimed = records[0].claimed_by if records else None
    where = parent_id or child
    for rule in session.rules:
        if rule.get("id") in rules_before or "createdAt" in rule:
            continue
        rule.update({"createdAt": at, "snapshotId": parent_id})
        if by is not None:
            rule["createdBy"] = by
        answer = {"rule": rule["id"], "action": rule.get("action", "allow")}
        records.append(
            AuditRecord(
                session.session_id, where, child, rule["tool"], rule.get("ref"), "rule-created", answer, None,
                at, by, claimed,
            )
        )  # fmt: skip
    for done in by_rule:
        answer = {"rule": done["rule"], "action": done["action"]}
        records.append(
            AuditRecord(session.session_id, where, child, done["name"], done["ref"], "rule", answer, None, at)
        )
    return records
