"""Rendering results as plain text and escaped HTML (no widgets needed).

Every public result's ``_repr_mimebundle_`` comes here: responses and
outputs, messages, snapshots, the list `Agent.pending` returns and the audit
trail (a table). A turn shows its model text, its tool calls with their
results collapsed in ``<details>``, and, when it paused, its interrupts
*instead of* a model bubble (Genkit's UX guidance).

Model and tool text is always escaped: nothing a model, a tool or a user says
can run script in a notebook. Static mode (``NB_AGENTS_STATIC=1``) makes the
output deterministic, so stored notebook outputs compare equal under nbval:
no ids, no timestamps (and, in `nb_agents.notebook`, no widgets).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from typing import Any

from ._display import STATIC_ENV, register, static_mode
from .listings import AuditTrail, PendingTurn, PendingTurns
from .responses import AgentResponse
from .stores.base import AuditRecord
from .types import AgentOutput, Artifact, Message, Part, SessionSnapshot

__all__ = [
    "STATIC_ENV",
    "audit_bundle",
    "error_html",
    "interrupt_html",
    "message_bundle",
    "output_bundle",
    "output_html",
    "output_text",
    "part_html",
    "pending_bundle",
    "response_bundle",
    "response_text",
    "snapshot_bundle",
    "static_mode",
    "stream_html",
    "tool_result_html",
]

_BOX = "border:1px solid var(--jp-border-color2,#ccc);border-radius:6px;padding:6px 10px;margin:4px 0"
_BUBBLE = "white-space:pre-wrap;padding:6px 10px;border-radius:6px;background:var(--jp-layout-color2,#f3f3f3)"
_PAUSE = "border-left:4px solid #d99a00;padding:4px 10px;margin:4px 0;background:var(--jp-layout-color1,#fff)"
_ERROR = "color:var(--jp-error-color1,#c62828);white-space:pre-wrap"
_MUTED = "color:var(--jp-ui-font-color2,#777);font-size:90%"
_PRE = "margin:2px 0;white-space:pre-wrap;font-size:90%"

Bundle = dict[str, str]


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def error_html(status: str | None, message: str) -> str:
    """An error line: its status and message, escaped."""
    head = f"{_esc(status)}: " if status else ""
    return f'<div class="nba-error" style="{_ERROR}">{head}{_esc(message)}</div>'


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _pre(value: Any) -> str:
    return f'<pre style="{_PRE}">{_esc(_json(value))}</pre>'


def _ids(**ids: str | None) -> list[tuple[str, str]]:
    """The (label, value) pairs worth showing; none in static mode."""
    if static_mode():
        return []
    return [(k.replace("_", " "), v) for k, v in ids.items() if v]


def _ids_html(**ids: str | None) -> str:
    pairs = _ids(**ids)
    if not pairs:
        return ""
    body = " · ".join(f"{_esc(k)} <code>{_esc(v)}</code>" for k, v in pairs)
    return f'<div style="{_MUTED}">{body}</div>'


def _name(part: Part) -> str:
    tr = part.tool_request or part.tool_response
    assert tr is not None
    return f"{tr.name} ({tr.ref})" if tr.ref else tr.name


_NO_RESULT = object()


# -- parts and messages --------------------------------------------------------------------
def tool_result_html(request: Part | None, output: Any = _NO_RESULT, *, name: str = "") -> str:
    """A tool call (its input) and its result, collapsed in ``<details>``."""
    label = _name(request) if request is not None else name
    body = ""
    if request is not None and request.tool_request is not None:
        body += f'<div style="{_MUTED}">input</div>{_pre(request.tool_request.input)}'
    summary = f"🔧 {_esc(label)}"
    if output is _NO_RESULT:
        summary += f' <span style="{_MUTED}">(no result yet)</span>'
    else:
        body += f'<div style="{_MUTED}">result</div>{_pre(output)}'
    return f'<details style="margin:2px 0"><summary>{summary}</summary>{body}</details>'


def interrupt_html(part: Part) -> str:
    """An interrupted tool call: its name, its input and its pause data."""
    assert part.tool_request is not None
    data = (part.metadata or {}).get("interrupt")
    out = [f'<div class="nba-interrupt" style="{_PAUSE}"><b>⏸ {_esc(_name(part))}</b> waits for an answer']
    if isinstance(data, dict):
        out.append(_mcp_html(data))
    out.append(f'<div style="{_MUTED}">input</div>{_pre(part.tool_request.input)}')
    if isinstance(data, dict):
        out.append(f'<div style="{_MUTED}">pause data</div>{_pre(data)}')
    out.append("</div>")
    return "".join(out)


def _mcp_html(data: dict[str, Any]) -> str:
    """Which MCP server and tool a pause comes from, and the tool's annotations (hints)."""
    mcp = data.get("mcp")
    if not isinstance(mcp, dict) or "server" not in mcp:
        return ""
    hints = mcp.get("annotations")
    marks = (
        ", ".join(f"{_esc(str(k).removesuffix('Hint'))}: {_esc(json.dumps(v))}" for k, v in hints.items())
        if isinstance(hints, dict) and hints
        else "no annotations"
    )
    where = f"MCP server <b>{_esc(mcp['server'])}</b> · tool <code>{_esc(mcp.get('tool', ''))}</code>"
    tail = f" · {marks}" if "annotations" in mcp else ""
    return f'<div class="nba-mcp" style="{_MUTED}">{where}{tail}</div>'


def part_html(part: Part) -> str:
    """One part as escaped HTML (tool calls and results collapsed)."""
    if part.text is not None:
        return f'<div class="nba-text" style="{_BUBBLE}">{_esc(part.text)}</div>'
    if part.reasoning is not None:
        return f'<details><summary style="{_MUTED}">reasoning</summary>{_pre(part.reasoning)}</details>'
    if part.tool_request is not None:
        if part.is_interrupt:
            return interrupt_html(part)
        meta = part.metadata or {}
        return tool_result_html(part, meta.get("pendingOutput", _NO_RESULT))
    if part.tool_response is not None:
        return tool_result_html(None, part.tool_response.output, name=_name(part) + " →")
    if part.media is not None:
        kind = f" ({part.media.content_type})" if part.media.content_type else ""
        return f'<div style="{_MUTED}">media{_esc(kind)}: <code>{_esc(part.media.url[:200])}</code></div>'
    return _pre(part.to_wire())


def _part_text(part: Part) -> str:
    if part.text is not None:
        return part.text
    if part.tool_request is not None:
        tr = part.tool_request
        meta = part.metadata or {}
        line = f"tool {_name(part)}: input {_json(tr.input)}"
        if part.is_interrupt:
            data = meta.get("interrupt")
            return f"interrupt {line}" + (f"\n  pause data {_json(data)}" if isinstance(data, dict) else "")
        return line + (f" -> {_json(meta['pendingOutput'])}" if "pendingOutput" in meta else "")
    if part.tool_response is not None:
        return f"tool {_name(part)} -> {_json(part.tool_response.output)}"
    return _json(part.to_wire())


def message_bundle(msg: Message) -> Bundle:
    """``text/plain`` and escaped ``text/html`` for one message."""
    body = "".join(part_html(p) for p in msg.content)
    return {
        "text/plain": f"[{msg.role}]\n" + "\n".join(_part_text(p) for p in msg.content),
        "text/html": f'<div class="nba-message" style="{_BOX}"><b>{_esc(msg.role)}</b>{body}</div>',
    }


def stream_html(text: str) -> str:
    """Model text as it streams in."""
    return f'<div class="nba-text" style="{_BUBBLE}">{_esc(text)}</div>' if text else ""


# -- turns ---------------------------------------------------------------------------------
def _turn_messages(out: AgentOutput) -> list[Message]:
    """The messages of the turn: from the state when carried, else the reply alone."""
    msgs = list(out.state.messages) if out.state is not None else []
    if msgs:
        start = max((i for i, m in enumerate(msgs) if m.role == "user"), default=-1) + 1
        return msgs[start:]
    return [out.message] if out.message is not None else []


def _turn_html(out: AgentOutput, tools: bool, interrupts: bool) -> str:
    msgs = _turn_messages(out)
    results = {
        (p.tool_response.name, p.tool_response.ref): p.tool_response.output
        for m in msgs
        if m.role == "tool"
        for p in m.content
        if p.tool_response is not None
    }
    paused = out.finish_reason == "interrupted"
    parts: list[str] = []
    for i, msg in enumerate(msgs):
        if msg.role != "model":
            continue
        last = i == len(msgs) - 1
        for p in msg.content:
            if p.tool_request is not None and not p.is_interrupt:
                if not tools:
                    continue
                meta = p.metadata or {}
                found = results.get((p.tool_request.name, p.tool_request.ref), _NO_RESULT)
                output = meta.get("pendingOutput", found)
                parts.append(tool_result_html(p, output))
            elif p.is_interrupt:
                if last and paused and interrupts:
                    parts.append(interrupt_html(p))
            elif not (last and paused) or p.text is None:
                parts.append(part_html(p))  # no model bubble for a paused turn
    return "".join(parts)


def _artifacts_html(arts: Iterable[Artifact]) -> str:
    out = []
    for art in arts:
        body = "".join(part_html(p) for p in art.parts)
        out.append(
            f'<details style="margin:2px 0"><summary>📎 {_esc(art.name or "artifact")}</summary>'
            f"{body}</details>"
        )
    return "".join(out)


def output_html(out: AgentOutput, *, tools: bool = True, interrupts: bool = True) -> str:
    """A turn as HTML; the widgets leave out what they show themselves.

    Args:
        out: The turn.
        tools: Include the tool calls and their results.
        interrupts: Include the interrupts of a paused turn.
    """
    finish = out.finish_reason or "unknown"
    parts = [f'<div class="nba-response" style="{_BOX}">', f'<div style="{_MUTED}">{_esc(finish)}</div>']
    parts.append(_turn_html(out, tools, interrupts))
    parts.append(_artifacts_html(out.artifacts or []))
    if out.error is not None:
        parts.append(error_html(out.error.status, out.error.message))
    parts.append(_ids_html(snapshot=out.snapshot_id, session=out.session_id))
    parts.append("</div>")
    return "".join(parts)


def output_text(out: AgentOutput) -> str:
    """A plain-text view of a turn."""
    lines = [f"[{out.finish_reason or 'unknown'}]"]
    msg = out.message
    if out.finish_reason == "interrupted" and msg is not None:
        lines += [_part_text(p) for p in msg.content if p.text is None]
    elif msg is not None:
        lines += [_part_text(p) for p in msg.content]
    lines += [
        f"artifact {a.name or ''}: " + " ".join(_part_text(p) for p in a.parts) for a in out.artifacts or []
    ]
    if out.error is not None:
        lines.append(f"error {out.error.status}: {out.error.message}")
    lines += [f"{k} {v}" for k, v in _ids(snapshot=out.snapshot_id, session=out.session_id)]
    return "\n".join(lines)


def output_bundle(out: AgentOutput) -> Bundle:
    """``text/plain`` and escaped ``text/html`` for an `AgentOutput`."""
    return {"text/plain": output_text(out), "text/html": output_html(out)}


def response_text(res: AgentResponse) -> str:
    """A plain-text view of a response."""
    return output_text(res.raw)


def response_bundle(res: AgentResponse) -> Bundle:
    """``text/plain`` and escaped ``text/html`` for a response (no widgets)."""
    return output_bundle(res.raw)


# -- snapshots, pending turns, audit --------------------------------------------------------
def snapshot_bundle(snap: SessionSnapshot) -> Bundle:
    """A snapshot: status, finish reason, error, history (collapsed), custom state."""
    status = f"{snap.status or 'completed'} / {snap.finish_reason or '-'}"
    ids = _ids(
        snapshot=snap.snapshot_id, session=snap.session_id, parent=snap.parent_id, updated=snap.updated_at
    )
    msgs = snap.state.messages if snap.state is not None else []
    custom = snap.state.custom if snap.state is not None else None
    html_parts = [f'<div class="nba-snapshot" style="{_BOX}"><b>snapshot</b> {_esc(status)}']
    html_parts.append(_ids_html(snapshot=snap.snapshot_id, session=snap.session_id, parent=snap.parent_id))
    if snap.error is not None:
        html_parts.append(
            f'<div style="{_ERROR}">{_esc(snap.error.status)}: {_esc(snap.error.message)}</div>'
        )
    history = "".join(message_bundle(m)["text/html"] for m in msgs)
    html_parts.append(f"<details><summary>{len(msgs)} messages</summary>{history}</details>")
    if custom is not None:
        html_parts.append(f"<details><summary>custom state</summary>{_pre(custom)}</details>")
    html_parts.append(_artifacts_html(snap.state.artifacts if snap.state is not None else []) + "</div>")
    lines = [f"snapshot {status}", *(f"{k} {v}" for k, v in ids), f"{len(msgs)} messages"]
    if snap.error is not None:
        lines.append(f"error {snap.error.status}: {snap.error.message}")
    return {"text/plain": "\n".join(lines), "text/html": "".join(html_parts)}


def pending_bundle(turns: Sequence[PendingTurn]) -> Bundle:
    """The turns waiting for an answer and their interrupts."""
    head = f"{len(turns)} paused turn{'s' if len(turns) != 1 else ''} waiting for an answer"
    html_parts = [f'<div class="nba-pending" style="{_BOX}"><b>{_esc(head)}</b>']
    lines = [head]
    for turn in turns:
        html_parts.append(
            _ids_html(session=turn.session_id, snapshot=turn.snapshot_id, updated=turn.snapshot.updated_at)
        )
        html_parts += [interrupt_html(i.part) for i in turn.interrupts]
        lines += [f"{k} {v}" for k, v in _ids(session=turn.session_id, snapshot=turn.snapshot_id)]
        lines += ["  " + _part_text(i.part) for i in turn.interrupts]
    html_parts.append("</div>")
    return {"text/plain": "\n".join(lines), "text/html": "".join(html_parts)}


def audit_bundle(records: Sequence[AuditRecord]) -> Bundle:
    """The audit trail as a table: which interrupt, what was answered, when, by whom."""
    static = static_mode()
    cols = ["name", "ref", "kind", "answer", "replaced_input", "answered_by"]
    if not static:
        cols = ["answered_at", "session_id", "snapshot_id", *cols]
    cell = 'style="text-align:left;vertical-align:top;padding:2px 6px"'
    head = "".join(f"<th {cell}>{_esc(c.replace('_', ' '))}</th>" for c in cols)
    rows = []
    lines = ["\t".join(cols)]
    for rec in records:
        shown = []
        for c in cols:
            v = getattr(rec, c)
            if v is None:
                shown.append("")
            elif c in ("answer", "replaced_input"):
                shown.append(_json(v))
            else:
                shown.append(str(v))
        short = [
            s[:8] + "…" if c in ("session_id", "snapshot_id") else s for c, s in zip(cols, shown, strict=True)
        ]
        rows.append("<tr>" + "".join(f"<td {cell}><code>{_esc(s)}</code></td>" for s in short) + "</tr>")
        lines.append("\t".join(" ".join(s.split()) for s in shown))
    table = f'<table class="nba-audit"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    return {"text/plain": "\n".join(lines), "text/html": table}


register(Message, static=message_bundle)
register(AgentOutput, static=output_bundle)
register(SessionSnapshot, static=snapshot_bundle)
register(AgentResponse, static=response_bundle)
register(PendingTurn, static=lambda turn: pending_bundle([turn]))
register(PendingTurns, static=pending_bundle)
register(AuditTrail, static=audit_bundle)
