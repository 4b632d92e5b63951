"""Partial answers in the notebook: a turn paused on several interrupts, each form sent on its own.

A stored turn paused on several calls answers each form as it is answered
(``resume(partial=True)``); the turn stays paused on the rest and resumes when
the last is answered. `resume_one` sends one form's answer and shows what
became of it; `waiting_line` says how many are answered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from ..chat import Chat
from ..errors import AgentError, NbAgentsError
from ..render._html import badge, esc
from ..responses import AgentResponse
from ..types import ToolResume
from .expiring import answers_to, expire_now, is_expiry_error
from .outcomes import call_names, did
from .records import form_record_html
from .streaming import LiveOutput

if TYPE_CHECKING:
    from ..stores.base import AuditRecord
    from .forms import InterruptForm
    from .view import TurnView

__all__ = ["call_keys", "follow", "replayed", "resume_one", "show_elsewhere", "status", "waiting_line"]


def follow(chat: Chat, other: Chat) -> None:
    """Move `chat` to where `other` went (the chat a view was given follows its turn)."""
    chat.snapshot_id, chat.session_id = other.snapshot_id, other.session_id
    chat.messages, chat.custom, chat.artifacts = list(other.messages), other.custom, list(other.artifacts)
    chat.last = other.last


def status(tone: str, word: str, text: str) -> str:
    return f'<div class="nba-live-status" style="margin-bottom:4px">{badge(word, tone)}{esc(text)}</div>'


def waiting_line(view: TurnView) -> str:
    """The view's header while it waits: how many questions, and how they are sent."""
    n = len(view.forms)
    if not n:
        return ""
    if n == 1:
        return status("wait", "waiting", "Waiting for your answer")
    if not view.partial:
        return status("wait", "waiting", f"Waiting for your answers ({n} questions, sent together)")
    answered = sum(1 for f in view.forms if f in view._sent or f.elsewhere is not None)
    left = n - answered
    done = f"{answered} of {n} answered; " if answered else f"{n} questions: "
    return status(
        "wait",
        "waiting",
        f"Waiting for your answers ({done}each is sent as you answer it, "
        f"and the turn resumes when the last is answered)"
        if left
        else "Sending…",
    )


def replayed(outcome: AgentResponse | BaseException) -> bool:
    """Whether a resume's outcome (a response, or the error a failed one raised) replays what the
    same answer, sent before, came to: nothing ran for this call."""
    res = outcome.response if isinstance(outcome, AgentError) else outcome
    return isinstance(res, AgentResponse) and res.raw._replayed


async def _answered_by_another(view: TurnView, form: InterruptForm) -> bool:
    """If the audit shows `form`'s call answered by an answer not sent from this view, show it
    on the form (its record and who answered) and return True."""
    key = (form.interrupt.name, form.interrupt.ref)
    record = next((r for r in await answers_to(view) if (r.name, r.ref) == key), None)
    if record is None or form in view._sent:
        return False
    show_elsewhere(view, form, record)
    return True


def show_elsewhere(view: TurnView, form: InterruptForm, record: AuditRecord) -> None:
    """Close `form` on the answer `record` gave its call elsewhere: its record says who answered."""
    form.answer, form.elsewhere = None, record
    form.lock()
    form.children = [widgets.HTML(value=form_record_html(form, "answered")), form.status]
    form.status.value = ""  # the record says who answered, and how
    view.header.value = waiting_line(view)


def call_keys(forms: list[Any]) -> set[tuple[str, str | None]]:
    return {(f.interrupt.name, f.interrupt.ref) for f in forms}


def _same_pause(view: TurnView, res: AgentResponse) -> bool:
    """Whether `res` is this turn still paused on some of its calls (not a new pause)."""
    if res.finish_reason != "interrupted" or not res.interrupts or res.message is None:
        return False
    calls = [(p.tool_request.name, p.tool_request.ref) for p in res.message.tool_requests if p.tool_request]
    mine = view.response.message
    asked = (
        [(p.tool_request.name, p.tool_request.ref) for p in mine.tool_requests if p.tool_request]
        if mine
        else []
    )
    return calls == asked and {(i.name, i.ref) for i in res.interrupts} <= call_keys(view.forms)


async def resume_one(view: TurnView, form: InterruptForm) -> AgentResponse | None:
    """Send one form's answer alone (a partial resume) and show where the turn went."""
    assert view.chat is not None and form.answer is not None
    answer = form.answer
    # every answer goes from the pause itself: the store moves it on from whichever went first
    chat = Chat(view.chat.agent, snapshot_id=view.response.snapshot_id)
    respond = [answer.part] if answer.kind == "respond" else []
    restart = [answer.part] if answer.kind == "restart" else []
    meta = {"answeredBy": view.answered_by} if view.answered_by else None
    live = LiveOutput(view._show, tools=view._tools)
    try:
        res = await live.follow(chat.resume_stream(respond, restart, meta, partial=True))
    except Exception as exc:  # noqa: BLE001 - shown on its form, which can answer again
        view._tools = live.tools
        view.stream.value = view._tools
        if is_expiry_error(exc) and await expire_now(view):
            return None  # too late: the form shows what the default did instead
        if await view._answered_elsewhere(expect="waiting"):
            return None  # another cell, tab or process answered them all: say so
        if await _answered_by_another(view, form):
            return None  # this call was answered another way elsewhere: the form says so
        message = str(exc) if isinstance(exc, NbAgentsError) else f"{type(exc).__name__}: {exc}"
        form.reset(f"Your answer was not accepted: {message}")
        return None
    view._tools = live.tools
    view.stream.value = view._tools
    # the same answer, given elsewhere first, replays what it came to: the form says who gave it
    if not (replayed(res) and await _answered_by_another(view, form)):
        view._sent.add(form)
    if _same_pause(view, res):
        if form.elsewhere is None:  # this answer took effect
            name = call_names(view.forms)[view.forms.index(form)]
            said = did(form, name) or f"{name}: {answer.label}"
            form.children = [widgets.HTML(value=form_record_html(form, "answered")), form.status]
            form.status.value = status("ok", "sent", f"{said}; the turn resumes when the last is answered")
            view.header.value = waiting_line(view)
        return res
    if view.result is not None:
        return res  # another answer's task already showed where the turn went
    view.last_resume = ToolResume(
        respond=[f.answer.part for f in view.forms if f.answer is not None and f.answer.kind == "respond"],
        restart=[f.answer.part for f in view.forms if f.answer is not None and f.answer.kind == "restart"],
        metadata=meta,
    )
    for other in view.forms:
        other.lock()
        other.status.value = ""
    if view.chat.snapshot_id == view.response.snapshot_id:
        follow(view.chat, chat)  # the chat this view was given goes on from where the turn went
        chat = view.chat
    return view._show_result(res, chat, view._tools)
