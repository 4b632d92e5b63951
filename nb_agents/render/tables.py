"""Listings as tables: snapshots, the turns waiting for an answer, the audit trail.

The audit trail is a table that fits a notebook column: when (local time),
the tool, the answer in words ("approved", "denied: not today"), who; ids
collapsed below it. Static mode leaves out what changes from run to run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..listings import PendingTurn
from ..rules import SessionRule
from ..stores.base import AuditRecord
from ..types import SessionSnapshot
from ._html import BOX, ERROR, MUTED, NO_TYPESET, badge, details, esc, ids_details, local_time, muted, pre
from .answers import answer_verb
from .summary import humanize
from .turns import interrupt_html, interrupt_text, message_bundle, tools_of

__all__ = ["audit_bundle", "audit_words", "pending_bundle", "rules_bundle", "snapshot_bundle"]

_CELL = (
    "text-align:left;vertical-align:top;padding:3px 10px 3px 0;"
    "border-bottom:1px solid var(--jp-border-color2,#ddd)"
)


def snapshot_bundle(snap: SessionSnapshot) -> dict[str, str]:
    """A snapshot: status, error, history (collapsed), custom state."""
    status = snap.status or "completed"
    finish = snap.finish_reason or "-"
    msgs = snap.state.messages if snap.state is not None else []
    custom = snap.state.custom if snap.state is not None else None
    out = [f'<div class="nba-snapshot" style="{BOX}">{badge("snapshot")}<b>{esc(status)}</b>']
    out.append(f' <span style="{MUTED}">({esc(finish)})</span>')
    if snap.error is not None:
        out.append(f'<div style="{ERROR}">{esc(snap.error.status)}: {esc(snap.error.message)}</div>')
    history = "".join(message_bundle(m)["text/html"] for m in msgs)
    out.append(details(f"{len(msgs)} messages", history))
    if custom is not None:
        out.append(details("Custom state", pre(custom)))
    out.append(
        ids_details(
            snapshot=snap.snapshot_id,
            session=snap.session_id,
            parent=snap.parent_id,
            updated=local_time(snap.updated_at),
        )
        + "</div>"
    )
    lines = [f"snapshot {status} / {finish}", f"{len(msgs)} messages"]
    if snap.error is not None:
        lines.append(f"error {snap.error.status}: {snap.error.message}")
    return {"text/plain": "\n".join(lines), "text/html": "".join(out)}


def pending_bundle(turns: Sequence[PendingTurn]) -> dict[str, str]:
    """The turns waiting for an answer and their questions."""
    n = len(turns)
    head = f"{n} paused turn{'s' if n != 1 else ''} waiting for an answer"
    out = [f'<div class="nba-pending" style="{BOX}"><b>{esc(head)}</b>']
    lines = [head]
    for turn in turns:
        known = tools_of(turn)
        note = turn.message.text
        for i, interrupt in enumerate(turn.interrupts):
            out.append(interrupt_html(interrupt.part, tools=known, note=note if i == 0 else ""))
            lines.append(interrupt_text(interrupt.part, tools=known))
        out.append(ids_details(session=turn.session_id, updated=local_time(turn.snapshot.updated_at)))
    if n:
        out.append(
            f'<div style="{MUTED}">Answer them in a running kernel with <code>pending(agent)</code>.</div>'
        )
    out.append("</div>")
    return {"text/plain": "\n".join(lines), "text/html": "".join(out)}


def _short(value: Any, limit: int = 80) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_SESSION_RULE = "always-"  # the id prefix of a rule made by "Approve always"


def _rule_words(kind: str, answer: dict[str, Any]) -> str:
    """A rule's answer in words (its id is an internal: the audit keeps it, the table does not)."""
    always = str(answer.get("rule", "")).startswith(_SESSION_RULE)
    if kind == "rule-created":
        return "approved always (this session): runs without asking from now on"
    if kind == "rule-revoked":
        return "approve always revoked: asks again"
    verb = "approved" if answer.get("action") == "allow" else "denied"
    return f"{verb} by approve always (this session)" if always else f"{verb} by a rule"


def audit_words(rec: AuditRecord) -> str:
    """The answer of a record in words: "approved", "denied: Not today.", "answered: {...}"."""
    if rec.kind in ("rule", "rule-created", "rule-revoked") and isinstance(rec.answer, dict):
        return _rule_words(rec.kind, rec.answer)
    verb = answer_verb(rec.kind, rec.answer)
    if verb == "approved" and isinstance(rec.answer, dict) and rec.answer.get("always") is True:
        verb = "approved always (this session)"
    extra = ""
    if rec.kind == "expired":
        return _expired_words(verb, rec.answer)
    if isinstance(rec.answer, dict):
        reason = rec.answer.get("error") if verb == "denied" else None
        rest = {
            k: v
            for k, v in rec.answer.items()
            if k not in ("approved", "toolApproved", "tool_approved", "error", "always")
        }
        texts = [v for v in rest.values() if isinstance(v, str)]
        if isinstance(reason, str) and ": " in reason:
            extra = reason.split(": ", 1)[1]
        elif len(rest) == 1 and len(texts) == 1 and verb != "answered":
            extra = texts[0]  # the one text beside Deny (or Approve): the reason, as the form calls it
        elif rest:
            extra = ", ".join(f"{humanize(str(k))}: {_short(v, 40)}" for k, v in rest.items())
        elif verb == "answered":
            extra = _short(rec.answer)
    elif verb == "answered" and rec.answer is not True:
        extra = _short(rec.answer)
    words = f"{verb}: {extra}" if extra else verb
    return words + (" (arguments edited)" if rec.replaced_input is not None else "")


def rules_bundle(rules: Sequence[SessionRule]) -> dict[str, str]:
    """A session's approval rules as a table: which tool, since when, made by whom (ids stay internal)."""
    from .._display import static_mode

    static = static_mode()  # times change from run to run
    head = ["Tool", "Scope", "By"] if static else ["Tool", "Scope", "Allowed since", "By"]
    rows, lines = [], ["\t".join(head)]
    for rule in rules:
        by, scope = rule.created_by or "", rule.scope_words
        cells = [rule.tool, scope, by] if static else [rule.tool, scope, local_time(rule.created_at), by]
        rows.append("<tr>" + "".join(f'<td style="{_CELL}">{esc(c)}</td>' for c in cells) + "</tr>")
        lines.append("\t".join(cells))
    if not rules:
        return {"text/plain": "no approval rules", "text/html": muted("No approval rules in this session.")}
    th = "".join(f'<th style="{_CELL};font-weight:600">{esc(h)}</th>' for h in head)
    table = (
        f'<table class="nba-rules {NO_TYPESET}" style="border-collapse:collapse;max-width:100%">'
        f"<thead><tr>{th}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return {"text/plain": "\n".join(lines), "text/html": table}


def _expired_words(verb: str, answer: Any) -> str:
    """A default applied on expiry: "expired at 14:02, denied: Too late." (no time in static mode)."""
    mark: dict[str, Any] = answer if isinstance(answer, dict) else {}
    found = mark.get("applied")
    applied: dict[str, Any] = found if isinstance(found, dict) else {}
    when = local_time(mark.get("at")) if isinstance(mark.get("at"), str) else ""
    words = verb.replace("expired", f"expired at {when}", 1) if when else verb
    if isinstance(applied.get("deny"), str):
        return f"{words}: {applied['deny']}"
    if "respond" in applied:
        return f"{words}: {_short(applied['respond'])}"
    return words


def audit_bundle(records: Sequence[AuditRecord]) -> dict[str, str]:
    """The audit trail as a table: when, which tool, what was answered, by whom."""
    from .._display import static_mode

    static = static_mode()
    head = ([] if static else ["When"]) + ["Tool", "Answer", "By"]
    rows, lines = [], ["\t".join(head)]
    for rec in records:
        cells = ([] if static else [local_time(rec.answered_at)]) + [
            rec.name + (f" ({rec.ref})" if rec.ref else ""),
            audit_words(rec),
            rec.answered_by or "",
        ]
        rows.append("<tr>" + "".join(f'<td style="{_CELL}">{esc(c)}</td>' for c in cells) + "</tr>")
        lines.append("\t".join(" ".join(c.split()) for c in cells))
    th = "".join(f'<th style="{_CELL};font-weight:600">{esc(h)}</th>' for h in head)
    table = (
        f'<table class="nba-audit {NO_TYPESET}" style="border-collapse:collapse;table-layout:auto;'
        f'max-width:100%;overflow-wrap:anywhere"><thead><tr>{th}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
    if not static and records:
        ids = "".join(
            f"<div><code>{esc(r.name)}</code>: session <code>{esc(r.session_id)}</code> · "
            f"snapshot <code>{esc(r.snapshot_id)}</code> · at {esc(r.answered_at)}</div>"
            for r in records
        )
        table += details(f'<span style="{MUTED}">Details</span>', f'<div style="{MUTED}">{ids}</div>')
    return {"text/plain": "\n".join(lines), "text/html": table}
