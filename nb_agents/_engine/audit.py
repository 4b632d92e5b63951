"""What a turn adds to its session's audit trail: one record per decision about a tool call.

The engine computes the records; the store only keeps them, in the turn's final
write (so an answer, the rules it made and its record are stored together):

* one per answer the turn ran on (``respond``, ``restart``, ``cancel``, or
  ``expired`` for a deadline's default), naming who answered (`AuditRecord.answered_by`: the
  authenticated principal, else what the client claimed) and the decision that
  let the call run or not (``decision``: ``person``, ``expiry``, or ``rule``
  when a deny rule refused an approved edit), with the exact input that ran;
* one ``rule`` (or ``policy``) record per call a rule (or the agent's
  allowlist, for a tool that needs a person) decided;
* one ``rule-created`` record per per-session rule an ``approve(always=True)``
  made (the rule gets its ``createdAt``, ``createdBy`` and ``snapshotId``).

Every record names the session's owner (`AuditRecord.requested_by`), so an
answer given by an approver reads "answered by lee, requested by ana".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..interrupts import is_cancel
from ..rules import always_asked
from ..stores.base import AuditRecord, now_iso
from ..types import ToolResume
from .decision import Decision

__all__ = ["asks_rule", "turn_audit"]

Decided = tuple[str, str | None, Decision, Any]
"""A decision the turn made: (tool name, ref, the decision, the input it was made on)."""


def asks_rule(resume: ToolResume) -> bool:
    """Whether `resume` approves a call with ``always=True`` (it asks for a per-session rule)."""
    return any(always_asked((p.metadata or {}).get("resumed")) for p in resume.restart)


def _answers(
    resume: ToolResume,
    session_id: str,
    parent_id: str,
    child_id: str,
    *,
    principal: str | None,
    decided: Mapping[tuple[str, str | None], tuple[Decision, Any]],
    at: str,
) -> list[AuditRecord]:
    """One record per answer in `resume`, which resumed `parent_id` as `child_id`."""
    meta = resume.metadata if isinstance(resume.metadata, dict) else {}
    claimed = meta.get("answeredBy")
    claimed = claimed if isinstance(claimed, str) else None
    by = principal if principal is not None else claimed
    records: list[AuditRecord] = []
    for part in resume.respond:
        if part.tool_response is not None:
            tr = part.tool_response
            expired = (part.metadata or {}).get("expired")  # a deadline's default: when, and which
            expired = expired if isinstance(expired, dict) else None
            person = expired is None
            kind = ("cancel" if is_cancel(part) else "respond") if person else "expired"
            records.append(
                AuditRecord(
                    session_id, parent_id, child_id, tr.name, tr.ref,
                    kind, tr.output if person else expired, None, at,
                    by if person else None, claimed if person else None,
                    "person" if person else "expiry", None,
                )
            )  # fmt: skip
    for part in resume.restart:
        if part.tool_request is not None:
            rq = part.tool_request
            pmeta = part.metadata or {}
            expired = pmeta.get("expired")
            expired = expired if isinstance(expired, dict) else None
            person = expired is None
            found = decided.get((rq.name, rq.ref))
            if found is None:  # not a call that needed a decision: the tool ran on the person's answer
                kind, ran = ("person" if person else "expiry"), rq.input
            else:
                decision, inp = found  # a held call: run, refused by a rule, or held again
                kind = decision.kind or ("person" if person else "expiry")
                ran = inp if decision.verdict == "run" else None
            records.append(
                AuditRecord(
                    session_id, parent_id, child_id, rq.name, rq.ref,
                    "restart" if person else "expired", pmeta.get("resumed") if person else expired,
                    rq.input if "replacedInput" in pmeta else None, at,
                    by if person else None, claimed if person else None, kind, ran,
                )
            )  # fmt: skip
    return records


def turn_audit(
    session_id: str,
    resume: ToolResume | None,
    parent_id: str | None,
    child: str,
    *,
    principal: str | None,
    decisions: Sequence[Decided],
    new_rules: Sequence[dict[str, Any]],
    requested_by: str | None = None,
) -> list[AuditRecord]:
    """The audit records of a turn (see the module docstring).

    Args:
        session_id: The turn's session.
        resume: The answer the turn ran on, if any (with `parent_id`, the snapshot it answered).
        child: The turn's own snapshot.
        principal: The authenticated caller, when there is one.
        decisions: What the decision step decided about the calls that needed one.
        new_rules: The per-session rules the turn's answers made (updated in place).
        requested_by: The session's owner (who asked), kept on every record.
    """
    at = now_iso()
    decided = {(name, ref): (d, inp) for name, ref, d, inp in decisions}
    records: list[AuditRecord] = []
    if resume is not None and parent_id is not None:
        records = _answers(resume, session_id, parent_id, child, principal=principal, decided=decided, at=at)
    by = records[0].answered_by if records else principal
    claimed = records[0].claimed_by if records else None
    where = parent_id or child
    for rule in new_rules:
        if "createdAt" in rule:
            continue
        rule.update({"createdAt": at, "snapshotId": parent_id})
        if by is not None:
            rule["createdBy"] = by
        answer = {"rule": rule["id"], "action": rule.get("action", "allow")}
        records.append(
            AuditRecord(
                session_id, where, child, rule["tool"], rule.get("ref"), "rule-created", answer, None,
                at, by, claimed,
            )
        )  # fmt: skip
    for name, ref, d, inp in decisions:
        if d.kind not in ("rule", "policy"):
            continue
        answer = d.rule if d.rule is not None else {"policy": "allowed_tools", "action": "allow"}
        ran = inp if d.verdict == "run" else None
        records.append(
            AuditRecord(
                session_id, where, child, name, ref, d.kind, answer, None, at, decision=d.kind, input=ran
            )
        )
    if requested_by is not None:
        records = [replace(r, requested_by=requested_by) for r in records]
    return records
