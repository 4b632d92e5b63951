"""What a finished turn leaves in the notebook: a record that reads without a kernel.

`turn_record_bundle` is a `TurnView`'s static text and HTML. While the turn
waits, it is the turn's summary and "Waiting for an answer ... `pending(agent)`"
(what a saved notebook shows for a form never answered); once answered, it is
the record: the status in words ("Approved by you at 14:02 · transferMoney
ran"), each question with its answer (the reason, the changed arguments) or
what its deadline's default did, the tools that ran and their results in
words, the reply, and whatever followed (a question asked again, its answer;
the other answers tried, side by side). Ids stay out of it, and the raw JSON
sits behind the record's one "Details" toggle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..nested import innermost
from ..render import changes_html, output_html, output_text, record_words, response_bundle, summary_html
from ..render._html import BOX, MUTED, NO_TYPESET, badge, details, esc, pre
from ..render.agents import asked_by_html
from ..render.summary import rows_html
from ..render.tables import audit_words
from ..render.turns import WAITING, tool_result_html

if TYPE_CHECKING:
    from .forms import InterruptForm
    from .view import TurnView

__all__ = [
    "after_pause",
    "answer_value",
    "expiry_words",
    "form_record_html",
    "raw_details",
    "record_body_html",
    "turn_record_bundle",
]

_TONE = {"approved": "ok", "denied": "no", "answered": "ok"}
_NESTED = "margin-left:10px;padding-left:8px;border-left:2px solid var(--jp-border-color2,#ddd)"
_QUIET = {"approved", "toolApproved", "tool_approved"}
_QUESTION = "border-left:3px solid var(--jp-border-color2,#ccc);padding-left:10px;margin:6px 0 10px 0"


def answer_value(form: InterruptForm) -> Any:
    """What the person gave besides the verb: a respond's output, a restart's reply (None if only a verb)."""
    answer = form.answer
    if answer is None:
        return None
    part = innermost(answer.part)  # a sub-agent's answer: what was given to the call that asked
    if part.tool_response is not None:
        value = part.tool_response.output
    else:
        value = (part.metadata or {}).get("resumed")
    if isinstance(value, dict):
        if answer.verb == "denied" and isinstance(value.get("error"), str):
            reason = value["error"].split(": ", 1)
            return {"reason": reason[1]} if len(reason) == 2 else None
        quiet = _QUIET | ({"always"} if value.get("toolApproved") is True else set())  # the label says so
        rest = {k: v for k, v in value.items() if k not in quiet and v is not None}
        return rest or None
    if value is True or (answer.verb == "denied" and isinstance(value, str)):
        return None
    return value


def expiry_words(form: Any) -> str:
    """What a question's deadline did, e.g. "Nobody answered in time: expired at 14:02, denied: Too late."."""
    record = getattr(form, "expired", None)
    if record is None:
        return ""
    words = audit_words(record)
    return f"Nobody answered in time: {words}"


def _label(form: Any, key: str) -> str:
    from ..render import humanize

    # the one text beside Deny is the reason, whatever the schema calls it
    return "Reason" if key in ("reason", getattr(form, "reason_key", None)) else humanize(key)


def form_record_html(form: InterruptForm, state: str) -> str:
    """One question and its answer (or what its deadline's default did), as the record shows it."""
    answer, elsewhere = form.answer, form.elsewhere
    expired = getattr(form, "expired", None)
    if expired is not None:
        verb = "expired"
    elif answer is not None and state != "stale":  # a form answered elsewhere has no answer of its own
        verb = answer.verb
    else:
        verb = "answered elsewhere"
    asked = asked_by_html(form.interrupt.path)
    summary = summary_html(form.summary, state=verb, raw=False)
    out = [f'<div class="nba-record" style="margin:6px 0">{asked}{summary}']
    if expired is not None:
        out.append(f'<div class="{NO_TYPESET}" style="margin-top:2px">{esc(expiry_words(form))}</div>')
    elif elsewhere is not None:
        words = f"Already answered ({record_words(elsewhere)})"
        out.append(f'<div class="{NO_TYPESET}" style="margin-top:2px">{esc(words)}</div>')
    elif answer is not None and state != "stale":
        label = answer.label[:1].upper() + answer.label[1:]
        if answer.label != answer.verb:  # the badge says the verb already
            out.append(
                f'<div style="margin-top:2px">{badge(answer.verb, _TONE.get(answer.verb, "muted"))}'
                f"{esc(label)}</div>"
            )
        value = answer_value(form)
        if isinstance(value, dict):
            out.append(rows_html([(_label(form, k), v, "") for k, v in value.items()]))
        elif value is not None:
            out.append(rows_html([("Answer", value, "")]))
        out.append(changes_html(list(answer.changed)))
    out.append("</div>")
    return "".join(out)


def _calls(message: Any) -> list[tuple[str, str | None]]:
    return [(p.tool_request.name, p.tool_request.ref) for p in message.content if p.tool_request is not None]


def after_pause(messages: list[Any], pause: Any) -> int:
    """Where the messages after the paused model message start (the history's end if not found)."""
    if pause is None:
        return len(messages)
    calls = _calls(pause)
    for n in range(len(messages) - 1, -1, -1):
        if messages[n].role == "model" and _calls(messages[n]) == calls:
            return n + 1
    return len(messages)


def ran_html(view: TurnView) -> str:
    """The tools that ran after the answers (their results in words), from the turn's history.

    An answer given in a tool's stead (a denial, a reply) is the question's record, not a run.
    """
    if view.result is None:
        return ""
    stood_in = {(f.interrupt.name, f.interrupt.ref) for f in view.forms if _stood_in(f)}
    messages = list(view.result.messages)
    rows = []
    for m in messages[after_pause(messages, view.response.message) :]:
        for p in m.content if m.role == "tool" else ():
            tr = p.tool_response
            if tr is None:
                continue
            if (tr.name, tr.ref) in stood_in:
                stood_in.discard((tr.name, tr.ref))  # the answer itself, once: not a run
                continue
            rows.append(tool_result_html(None, tr.output, name=tr.name, toggle=False))
    return "".join(rows)


def _stood_in(form: Any) -> bool:
    """Whether the form's answer (or its default) was the call's output: the tool did not run."""
    expired = getattr(form, "expired", None)
    if expired is not None:
        applied = expired.answer.get("applied") if isinstance(expired.answer, dict) else None
        return not (isinstance(applied, dict) and "approve" in applied)
    return form.answer is not None and form.answer.kind == "respond"


def raw_details(view: TurnView) -> str:
    """The record's one toggle: the raw JSON of each question and its answer."""
    rows = []
    for form in view.forms:
        entry: dict[str, Any] = {"tool": form.interrupt.name, **form.summary.raw}
        if form.answer is not None and view.state != "stale":  # a refused answer is not the record's
            entry["answer"] = form.answer.part.to_wire()
        rows.append(entry)
    if not rows:
        return ""
    return details(f'<span style="{MUTED}">Details</span>', pre(rows), cls="nba-raw")


def turn_record_bundle(view: TurnView) -> dict[str, str]:
    """The static text and HTML of a `TurnView` (see the module docstring)."""
    if view.state in ("waiting", "sending") or (view.state == "stale" and not view.forms):
        return response_bundle(view.response)
    html, text = _record(view)
    return {
        "text/plain": text,
        "text/html": f'<div class="nba-response nba-record" style="{BOX}">{html}</div>',
    }


def record_body_html(view: TurnView) -> str:
    """The record below its status line: what a settled live view shows under its header
    (its `ForkPanel` shows the answers compared)."""
    return _record(view, outcome=False, forks=False)[0]


def _record(
    view: TurnView, *, toggle: bool = True, outcome: bool = True, forks: bool = True
) -> tuple[str, str]:
    state = view.state
    lines = [view.outcome] if view.outcome else []
    html = [
        f'<div style="margin-bottom:4px"><b>{esc(view.outcome)}</b></div>' if view.outcome and outcome else ""
    ]
    html.append(
        output_html(view.response.raw, interrupts=False, status=False, box=False, ids=False, toggles=False)
    )
    panel = getattr(view, "fork_panel", None)
    comparisons: list[str] = list(panel.comparisons) if panel is not None else []
    compared = bool(comparisons)
    several = len(view.forms) > 1
    for form in view.forms:
        if compared:  # each answer is in its column below
            html.append(summary_html(form.summary, state=f"{len(comparisons) + 1} answers", raw=False))
        elif several:  # each question in a block of its own, as its form was
            html.append(f'<div style="{_QUESTION}">{form_record_html(form, state)}</div>')
        else:
            html.append(form_record_html(form, state))
        lines.append(f"{form.summary.title}: {form.summary.question}".rstrip(": "))
        if form.answer is not None and state != "stale" and not compared:
            lines.append(f"  {form.answer.label}")
        elif getattr(form, "expired", None) is not None:
            lines.append(f"  {expiry_words(form)}")
        elif form.elsewhere is not None:
            lines.append(f"  Already answered ({record_words(form.elsewhere)})")
    if compared:
        html.extend(comparisons if forks else [])
        branches = panel.branches if panel is not None else []
        lines.extend(f"Another answer ({n}): {b.outcome}" for n, b in enumerate(branches, 1))
    elif view.result is not None:
        if view.child is not None:
            child_html, child_text = (
                _record(view.child, toggle=False)
                if view.child.state not in ("waiting", "sending")
                else (
                    response_bundle(view.child.response)["text/html"],
                    WAITING.replace("`", ""),
                )
            )
            html.append(f'<div style="{_NESTED}">{child_html}</div>')
            lines.append(child_text)
        else:
            html.append(ran_html(view))
            html.append(
                output_html(
                    view.result.raw, tools=False, box=False, known_tools=view.tools, ids=False, toggles=False
                )
            )
            lines.append(output_text(view.result.raw))
    if toggle:
        html.append(raw_details(view))
    return "".join(html), "\n".join(lines)
