"""Answers in words: "Approved by ana at 14:02 · transferMoney ran".

One vocabulary for what a person did with an interrupt, used by the live
status of a form, the record a finished form leaves in the notebook, the
"Already answered (...)" of a stale form and the audit table: `answer_verb`
reads an answer (a respond output or a restart's ``resumed`` value) as
approved / denied / answered, `answer_line` says it with who, when and what
followed.
"""

from __future__ import annotations

from typing import Any

from ..stores.base import AuditRecord
from ._html import local_time

__all__ = ["answer_line", "answer_verb", "record_words"]

_DENIED_PREFIX = "The user denied"


def answer_verb(kind: str, answer: Any) -> str:
    """``"approved"``, ``"denied"``, ``"cancelled"`` or ``"answered"`` for an answer as the audit records it.

    Example:
        >>> answer_verb("restart", {"toolApproved": True}), answer_verb("respond", {"approved": False})
        ('approved', 'denied')
        >>> answer_verb("expired", {"at": "2026-05-03T14:02:00.000Z", "applied": {"deny": "Too late."}})
        'expired, denied'
    """
    if kind == "cancel":  # the person abandoned the call: it did not run
        return "cancelled"
    if kind == "expired":  # nobody answered in time: the declared default was applied
        applied = answer.get("applied") if isinstance(answer, dict) else None
        applied = applied if isinstance(applied, dict) else {}
        what = "approved" if "approve" in applied else "denied" if "deny" in applied else "answered"
        return f"expired, {what}"
    if isinstance(answer, dict):
        if answer.get("toolApproved") is True or answer.get("tool_approved") is True:
            return "approved"
        if isinstance(answer.get("approved"), bool):
            return "approved" if answer["approved"] else "denied"
        error = answer.get("error")
        if kind == "respond" and isinstance(error, str) and error.startswith(_DENIED_PREFIX):
            return "denied"
    if kind == "respond" and isinstance(answer, str) and answer.startswith(_DENIED_PREFIX):
        return "denied"
    if kind == "restart" and answer is True:
        return "approved"
    return "answered"


def answer_line(verb: str, *, by: str | None = None, at: Any = None, outcome: str = "") -> str:
    """A sentence: the verb, who, when (local time), and what followed.

    Example:
        >>> answer_line("approved", by="ana", outcome="transferMoney ran")
        'Approved by ana · transferMoney ran'
    """
    words = [verb[:1].upper() + verb[1:]]
    if by:
        words.append(f"by {by}")
    when = local_time(at) if at is not None else ""
    if when:
        words.append(f"at {when}")
    line = " ".join(words)
    return f"{line} · {outcome}" if outcome else line


def record_words(rec: AuditRecord, *, you: str | None = None) -> str:
    """An audit record in words, e.g. "approved by bob at 14:01" (lower case, for inside a sentence).

    An answer given by `you` (the person at this notebook) says "by you".
    """
    by = "you" if you is not None and rec.answered_by == you else rec.answered_by
    line = answer_line(answer_verb(rec.kind, rec.answer), by=by, at=rec.answered_at)
    return line[:1].lower() + line[1:]
