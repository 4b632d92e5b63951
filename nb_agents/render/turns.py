"""Turns, messages and parts as a person reads them: plain text and escaped HTML.

A message shows its role in words ("You", "Assistant"), model text rendered
as markdown, tool calls as one-line rows with input and result collapsed. A
turn that paused shows each interrupt as its summary (title, question, the
model's words, labelled arguments) instead of a model bubble, and says that it
waits. Ids, finish reasons and times sit in a collapsed "Details" (none in
static mode). Everything model- or tool-written is escaped and never typeset.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..nested import sub_pause
from ..responses import AgentResponse

if TYPE_CHECKING:
    from ..protocol import AgentProtocol
from ..types import AgentOutput, Artifact, Message, Part
from ._html import BOX, ERROR, MUTED, NO_TYPESET, badge, details, esc, ids_details, pre, to_json
from .agents import nested_interrupts_html, nested_interrupts_text
from .markdown import markdown_html
from .summary import interrupt_summary, summary_html, value_words

__all__ = [
    "ROLE_NAMES",
    "error_html",
    "interrupt_html",
    "interrupt_text",
    "message_bundle",
    "output_bundle",
    "output_html",
    "output_text",
    "part_html",
    "response_bundle",
    "response_text",
    "stream_html",
    "tool_outputs",
    "tool_result_html",
    "tools_of",
]

ROLE_NAMES = {"user": "You", "model": "Assistant", "tool": "Tool", "system": "System"}
_PAUSE = (
    "border-left:4px solid var(--jp-warn-color1,#d99a00);padding:6px 10px;margin:6px 0;"
    "background:var(--jp-layout-color1,#fff)"
)
_USER = "white-space:pre-wrap;overflow-wrap:anywhere"
_ROLE = "font-weight:600;font-size:90%;margin-top:4px"
_NO_RESULT = object()
_STATUS = {
    "length": "The reply was cut short: it reached the length limit.",
    "blocked": "The model declined to answer (blocked).",
    "aborted": "Stopped before it finished.",
    "detached": "Running in the background.",
    "other": "The model stopped for another reason.",
    "unknown": "",
    "stop": "",
    "interrupted": "",
    "failed": "",
}
WAITING = "Waiting for an answer. In a running kernel, `pending(agent)` shows the form."


class _FromAgent(Protocol):
    """A response, a chat or a pending turn: each knows the agent it came from (or None)."""

    @property
    def agent(self) -> AgentProtocol | None: ...


def tool_outputs(messages: Sequence[Message]) -> dict[tuple[str, str | None], Any]:
    """The output of each tool call in `messages`, by the call's (name, ref)."""
    return {
        (p.tool_response.name, p.tool_response.ref): p.tool_response.output
        for m in messages
        if m.role == "tool"
        for p in m.content
        if p.tool_response is not None
    }


def tools_of(source: _FromAgent | None) -> Mapping[str, Any]:
    """The tools of the agent a response, chat or pending turn came from, by name; empty when unknown."""
    agent = source.agent if source is not None else None
    return agent.tools if agent is not None else {}


def error_html(status: str | None, message: str) -> str:
    """An error line: its status and message, escaped."""
    head = f"{esc(status)}: " if status else ""
    return f'<div class="nba-error {NO_TYPESET}" style="{ERROR}">{head}{esc(message)}</div>'


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else to_json(value).replace("\n", " ")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_result_html(
    request: Part | None, output: Any = _NO_RESULT, *, name: str = "", toggle: bool = True
) -> str:
    """A tool call as one row: its name and its result in words ("→ Success: yes · ...").

    With `toggle`, the raw input and result are collapsed below the row; a record
    (which keeps them in its one "Details") shows the row alone.
    """
    tr = request.tool_request if request is not None else None
    label = tr.name if tr is not None else name
    body = ""
    if tr is not None:
        body += f'<div style="{MUTED}">input</div>{pre(tr.input)}'
    if output is _NO_RESULT:
        tail = f'<span style="{MUTED}">no result yet</span>'
    else:
        tail = f'<span style="{MUTED}">→ {esc(value_words(output, 100))}</span>'
        body += f'<div style="{MUTED}">result</div>{pre(output)}'
    name = f'<code class="{NO_TYPESET}">{esc(label)}</code>'
    summary = f'{badge("tool")}{name} <span class="{NO_TYPESET}">{tail}</span>'
    if not toggle:
        return f'<div class="nba-tool" style="margin:2px 0">{summary}</div>'
    return details(summary, body, cls="nba-tool")


def interrupt_html(part: Part, *, tools: Mapping[str, Any] | None = None, note: str = "") -> str:
    """An interrupted call as its summary: title, question, the model's words, arguments."""
    assert part.tool_request is not None
    if sub_pause(part) is not None:  # it waits on a sub-agent: show the sub-agent's questions
        return nested_interrupts_html(part, tools, note, _PAUSE)
    tool = (tools or {}).get(part.tool_request.name)
    summary = interrupt_summary(
        part,
        input_schema=getattr(tool, "input_schema", None),
        description=getattr(tool, "description", None),
        note=note,
    )
    return f'<div class="nba-interrupt" style="{_PAUSE}">{summary_html(summary)}</div>'


def interrupt_text(part: Part, *, tools: Mapping[str, Any] | None = None) -> str:
    """An interrupted call in plain text: its title, question and arguments."""
    assert part.tool_request is not None
    if sub_pause(part) is not None:
        return nested_interrupts_text(part, tools)
    tool = (tools or {}).get(part.tool_request.name)
    s = interrupt_summary(
        part,
        input_schema=getattr(tool, "input_schema", None),
        description=getattr(tool, "description", None),
    )
    lines = [f"{s.title} ({'needs approval' if s.kind == 'approval' else 'needs an answer'})"]
    if s.question:
        lines.append(f"  {s.question}")
    lines += [f"  {label}: {_short(value, 200)}" for label, value, _ in s.rows]
    return "\n".join(lines)


def part_html(part: Part) -> str:
    """One part as escaped HTML (model text as markdown, tool calls as rows)."""
    if part.text is not None:
        return markdown_html(part.text, cls="nba-text")
    if part.reasoning is not None:
        return details(f'<span style="{MUTED}">Reasoning</span>', pre(part.reasoning))
    if part.tool_request is not None:
        if part.is_interrupt:
            return interrupt_html(part)
        return tool_result_html(part, (part.metadata or {}).get("pendingOutput", _NO_RESULT))
    if part.tool_response is not None:
        return tool_result_html(None, part.tool_response.output, name=part.tool_response.name)
    if part.media is not None:
        kind = f" ({part.media.content_type})" if part.media.content_type else ""
        return muted_media(kind, part.media.url)
    return pre(part.to_wire())


def muted_media(kind: str, url: str) -> str:
    return f'<div style="{MUTED}">media{esc(kind)}: <code>{esc(url[:200])}</code></div>'


def _part_text(part: Part) -> str:
    if part.text is not None:
        return part.text
    if part.tool_request is not None:
        tr = part.tool_request
        if part.is_interrupt:
            return interrupt_text(part)
        meta = part.metadata or {}
        line = f"tool {tr.name}({_short(tr.input, 200)})"
        return line + (f" -> {_short(meta['pendingOutput'], 200)}" if "pendingOutput" in meta else "")
    if part.tool_response is not None:
        return f"tool {part.tool_response.name} -> {value_words(part.tool_response.output, 200)}"
    return to_json(part.to_wire())


def _role_html(role: str) -> str:
    return f'<div class="nba-role" style="{_ROLE}">{esc(ROLE_NAMES.get(role, role.title()))}</div>'


def _message_body(msg: Message) -> str:
    if msg.role == "user":
        texts = "".join(
            f'<div class="nba-text {NO_TYPESET}" style="{_USER}">{esc(p.text)}</div>'
            if p.text is not None
            else part_html(p)
            for p in msg.content
        )
        return texts
    return "".join(part_html(p) for p in msg.content)


def message_bundle(msg: Message) -> dict[str, str]:
    """``text/plain`` and escaped ``text/html`` for one message, under its role in words."""
    role = ROLE_NAMES.get(msg.role, msg.role.title())
    return {
        "text/plain": f"{role}: " + "\n".join(_part_text(p) for p in msg.content),
        "text/html": (
            f'<div class="nba-message nba-{esc(msg.role)}">{_role_html(msg.role)}{_message_body(msg)}</div>'
        ),
    }


def stream_html(text: str) -> str:
    """Model text as it streams in, rendered as markdown."""
    return markdown_html(text, cls="nba-text") if text else ""


# -- turns ---------------------------------------------------------------------------------
def turn_messages(out: AgentOutput) -> list[Message]:
    """The messages of the turn: from the state when carried, else the reply alone."""
    msgs = list(out.state.messages) if out.state is not None else []
    if msgs:
        start = max((i for i, m in enumerate(msgs) if m.role == "user"), default=-1) + 1
        return msgs[start:]
    return [out.message] if out.message is not None else []


def _turn_html(
    out: AgentOutput, tools: bool, interrupts: bool, known: Mapping[str, Any], toggle: bool = True
) -> str:
    msgs = turn_messages(out)
    results = tool_outputs(msgs)
    paused = out.finish_reason == "interrupted"
    rows: list[str] = []
    for i, msg in enumerate(msgs):
        if msg.role != "model":
            continue
        last = i == len(msgs) - 1
        note = msg.text if last and paused else ""
        for p in msg.content:
            if p.tool_request is not None and not p.is_interrupt:
                if tools:
                    found = results.get((p.tool_request.name, p.tool_request.ref), _NO_RESULT)
                    pending = (p.metadata or {}).get("pendingOutput", found)
                    rows.append(tool_result_html(p, pending, toggle=toggle))
            elif p.is_interrupt:
                if last and paused and interrupts:
                    rows.append(interrupt_html(p, tools=known, note=note))
                    note = ""  # the model's words go with the first question only
            elif not (last and paused) or p.text is None:
                rows.append(part_html(p))  # a paused turn's text goes with its question
    return "".join(rows)


def _artifacts_html(arts: Iterable[Artifact]) -> str:
    return "".join(
        details(
            f"{badge('file')}{esc(art.name or 'artifact')}",
            "".join(part_html(p) for p in art.parts),
            cls="nba-artifact",
        )
        for art in arts
    )


def status_html(out: AgentOutput) -> str:
    """What a person needs to know about how the turn ended ("" for a normal reply)."""
    finish = out.finish_reason or "unknown"
    if finish == "interrupted":
        waiting = markdown_html(WAITING, cls="nba-wait")
        return f'<div class="nba-status">{badge("waiting", "wait")}{waiting}</div>'
    text = _STATUS.get(finish, f"Finished: {finish}.")
    return f'<div class="nba-status" style="{MUTED}">{esc(text)}</div>' if text else ""


def output_html(
    out: AgentOutput,
    *,
    tools: bool = True,
    interrupts: bool = True,
    status: bool = True,
    known_tools: Mapping[str, Any] | None = None,
    box: bool = True,
    ids: bool = True,
    toggles: bool = True,
) -> str:
    """A turn as HTML; the widgets leave out what they show themselves.

    Args:
        out: The turn.
        tools: Include the tool calls and their results.
        interrupts: Include the interrupts of a paused turn.
        status: Include the line that says how the turn ended (when it matters).
        known_tools: The agent's tools, for labels and descriptions.
        box: Draw the turn in a bordered box.
        ids: Include the collapsed "Details" (ids, finish reason).
        toggles: Tool rows with their raw input and result collapsed below (a record: rows alone).
    """
    parts = [status_html(out) if status else ""]
    parts.append(_turn_html(out, tools, interrupts, known_tools or {}, toggles))
    parts.append(_artifacts_html(out.artifacts or []))
    if out.error is not None:
        parts.append(error_html(out.error.status, out.error.message))
    if ids:
        parts.append(turn_ids(out))
    body = "".join(parts)
    return f'<div class="nba-response" style="{BOX}">{body}</div>' if box else body


def turn_ids(out: AgentOutput) -> str:
    """The turn's ids and finish reason, collapsed under "Details" (nothing in static mode)."""
    return ids_details(finish_reason=out.finish_reason, snapshot=out.snapshot_id, session=out.session_id)


def output_text(out: AgentOutput, *, known_tools: Mapping[str, Any] | None = None) -> str:
    """A plain-text view of a turn."""
    lines: list[str] = []
    msg = out.message
    if out.finish_reason == "interrupted" and msg is not None:
        lines.append(WAITING.replace("`", ""))
        lines += [interrupt_text(p, tools=known_tools) for p in msg.content if p.is_interrupt]
    elif msg is not None:
        lines += [_part_text(p) for p in msg.content]
    else:
        text = _STATUS.get(out.finish_reason or "unknown", "")
        lines += [text] if text else []
    lines += [
        f"artifact {a.name or ''}: " + " ".join(_part_text(p) for p in a.parts) for a in out.artifacts or []
    ]
    if out.error is not None:
        lines.append(f"error {out.error.status}: {out.error.message}")
    return "\n".join(lines) or f"({out.finish_reason or 'unknown'})"


def output_bundle(out: AgentOutput) -> dict[str, str]:
    """``text/plain`` and escaped ``text/html`` for an `AgentOutput`."""
    return {"text/plain": output_text(out), "text/html": output_html(out)}


def response_text(res: AgentResponse) -> str:
    """A plain-text view of a response."""
    return output_text(res.raw, known_tools=tools_of(res))


def response_bundle(res: AgentResponse) -> dict[str, str]:
    """``text/plain`` and escaped ``text/html`` for a response (no widgets)."""
    known = tools_of(res)
    return {
        "text/plain": output_text(res.raw, known_tools=known),
        "text/html": output_html(res.raw, known_tools=known),
    }
