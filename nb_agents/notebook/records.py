"""What a finished turn leaves in the notebook: a record that reads without a kernel.

`turn_record_bundle` is a `TurnView`'s static text and HTML. While the turn
waits, it is the turn's summary and "Waiting for an answer ... `pending(agent)`"
(what a saved notebook shows for a form never answered); once answered, it is
the record: the status in words ("Approved by ana at 14:02 · transferMoney
ran"), each question with its answer (the reason, the changed arguments),
the reply, and whatever followed (a question asked again, its answer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..nested import innermost
from ..render import changes_html, output_html, output_text, response_bundle, summary_html
from ..render._html import BOX, MUTED, badge, esc
from ..render.agents import asked_by_html
from ..render.summary import rows_html
from ..render.turns import WAITING

if TYPE_CHECKING:
    from .forms import InterruptForm
    from .view import TurnView

__all__ = ["answer_value", "form_record_html", "turn_record_bundle"]

_TONE = {"approved": "ok", "denied": "no", "answered": "ok"}
_NESTED = "margin-left:10px;padding-left:8px;border-left:2px solid var(--jp-border-color2,#ddd)"
_QUIET = {"approved", "toolApproved", "tool_approved"}


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


def form_record_html(form: InterruptForm, state: str) -> str:
    """One question and its answer, as the record shows it."""
    answer = form.answer
    verb = answer.verb if answer is not None and state != "stale" else "answered elsewhere"
    asked = asked_by_html(form.interrupt.path)
    out = [f'<div class="nba-record" style="margin:6px 0">{asked}{summary_html(form.summary, state=verb)}']
    if answer is not None and state != "stale":
        label = answer.label[:1].upper() + answer.label[1:]
        if answer.label != answer.verb:  # the badge says the verb already
            out.append(
                f'<div style="margin-top:2px">{badge(answer.verb, _TONE.get(answer.verb, "muted"))}'
                f"{esc(label)}</div>"
            )
        value = answer_value(form)
        if isinstance(value, dict):
            out.append(
                rows_html([(k.title() if k == "reason" else _label(k), v, "") for k, v in value.items()])
            )
        elif value is not None:
            out.append(rows_html([("Answer", value, "")]))
        out.append(changes_html(list(answer.changed)))
    out.append("</div>")
    return "".join(out)


def _label(name: str) -> str:
    from ..render import humanize

    return humanize(name)


def turn_record_bundle(view: TurnView) -> dict[str, str]:
    """The static text and HTML of a `TurnView` (see the module docstring)."""
    if view.state in ("waiting", "sending") or (view.state == "stale" and not view.forms):
        return response_bundle(view.response)
    html, text = _record(view)
    return {
        "text/plain": text,
        "text/html": f'<div class="nba-response nba-record" style="{BOX}">{html}</div>',
    }


def _record(view: TurnView) -> tuple[str, str]:
    state = view.state
    lines = [view.outcome] if view.outcome else []
    html = [f'<div style="margin-bottom:4px"><b>{esc(view.outcome)}</b></div>' if view.outcome else ""]
    html.append(output_html(view.response.raw, interrupts=False, status=False, box=False, ids=False))
    for form in view.forms:
        html.append(form_record_html(form, state))
        lines.append(f"{form.summary.title}: {form.summary.question}".rstrip(": "))
        if form.answer is not None and state != "stale":
            lines.append(f"  {form.answer.label}")
    if view.result is not None:
        if view.child is not None:
            child_html, child_text = (
                _record(view.child)
                if view.child.state not in ("waiting", "sending")
                else (
                    response_bundle(view.child.response)["text/html"],
                    WAITING.replace("`", ""),
                )
            )
            html.append(f'<div style="{_NESTED}">{child_html}</div>')
            lines.append(child_text)
        else:
            html.append(output_html(view.result.raw, tools=True, box=False, known_tools=view.tools))
            lines.append(output_text(view.result.raw))
    panel = getattr(view, "fork_panel", None)
    if panel is not None and panel.branches:
        html.append(panel.record_html())
        lines.extend(f"Another answer (fork {n}): {b.outcome}" for n, b in enumerate(panel.branches, 1))
    if view.answered_by and state != "stale":
        html.append(f'<div style="{MUTED}">Answered in this notebook by {esc(view.answered_by)}.</div>')
    return "".join(html), "\n".join(lines)
