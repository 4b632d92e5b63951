"""Deadlines in a live `TurnView`: when one is reached, the form becomes a record of its default.

A form whose pause has a deadline shows a `Countdown` that ticks in the
browser. When the deadline is reached, the view asks the agent for the
session (``agent.get_snapshot(session_id=...)``: the engine applies the
declared default then, once, whoever asks first; see `nb_agents.expiry`),
reads the audit to see what answered the pause, and shows it: each question
says "Nobody answered in time: expired at 14:02, denied: ...", and the turn
the default ran follows as if a person had answered (the reply, a question
asked again). Three things notice the deadline: the browser's countdown, a
kernel-side timer set once for the deadline (for a notebook whose countdown
is not on screen), and an answer that arrives too late (the engine refuses it
with ``FAILED_PRECONDITION``; the view shows what the default did instead of
the error). Each only asks; applying is the engine's, and happens once.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .._sync import start as spawn
from ..chat import Chat
from ..errors import NbAgentsError
from ..expiry import now, parse
from ..render import tool_result_html
from ..responses import AgentResponse
from ..stores.base import ANSWER_KINDS
from ..types import AgentOutput, SessionSnapshot
from .records import after_pause

if TYPE_CHECKING:
    from ..protocol import BaseAgent
    from ..stores.base import AuditRecord
    from .view import TurnView

__all__ = ["answers_in", "answers_to", "expire_now", "is_expiry_error", "watch_deadlines"]

_GRACE = 0.25  # seconds after the deadline: the engine's clock must see it passed too
_AGAIN = (0.5, 1.0, 2.0, 4.0, 8.0)  # the kernel timer's pauses before asking again


def watch_deadlines(view: TurnView) -> None:
    """Ask for the default when a form's countdown ends, or (a timer) when the first deadline passes."""
    deadlines = [d for f in view.forms if (d := parse(getattr(f.summary, "expires_at", None) or ""))]
    if not deadlines:
        return
    for form in view.forms:
        clock = getattr(form, "countdown", None)
        if clock is not None:
            clock.on_expired(lambda: _soon(view))
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return  # a plain script: nothing ticks; the next read of the session applies the default
    view.deadline_task = spawn(_at(view, (min(deadlines) - now()).total_seconds()))


async def _at(view: TurnView, seconds: float) -> None:
    await asyncio.sleep(max(0.0, seconds) + _GRACE)
    # an ask that shows nothing (the session unreadable for a moment, or the default still being
    # applied by another ask) is asked again a few times, so the form does not stay a live one
    for pause in _AGAIN:
        if view.state != "waiting" or await expire_now(view):
            return
        await asyncio.sleep(pause)
    await expire_now(view)


def _soon(view: TurnView) -> None:
    if view.state == "waiting":
        spawn(expire_now(view))


def is_expiry_error(exc: BaseException) -> bool:
    """Whether `exc` is the engine refusing an answer because the pause's deadline passed."""
    return (
        isinstance(exc, NbAgentsError)
        and exc.status == "FAILED_PRECONDITION"
        and isinstance(exc.details, dict)
        and "expiresAt" in exc.details
    )


async def answers_to(view: TurnView) -> list[AuditRecord]:
    """The audit's answers to this view's calls (a person's, an expiry's); [] when none can be read."""
    agent = view.chat.agent if view.chat is not None else None
    sid, snap = view.response.session_id, view.response.snapshot_id
    if not (sid and snap and agent is not None):
        return []
    return await answers_in(agent, sid, snap, {(f.interrupt.name, f.interrupt.ref) for f in view.forms})


async def answers_in(
    agent: BaseAgent, session_id: str, snapshot_id: str, keys: set[tuple[str, str | None]]
) -> list[AuditRecord]:
    """The audit's answers to the calls `keys` of the pause `snapshot_id`; [] when none can be read.

    Partial answers each move the pause to a new snapshot: the answers are followed from
    `snapshot_id` along the snapshots they made, each call taken once.
    """
    try:
        records = await agent.audit(session_id)
    except Exception:  # noqa: BLE001 - no audit to read (a store without one): nothing known
        return []
    snaps, left, found = {snapshot_id}, set(keys), []
    grew = True
    while grew and left:
        grew = False
        for r in records:
            key = (r.name, r.ref)
            if r.snapshot_id in snaps and key in left and r.kind in ANSWER_KINDS:
                found.append(r)
                left.discard(key)
                snaps.add(r.child_id)
                grew = True
    return found


async def expire_now(view: TurnView, *, late: bool = False) -> bool:
    """If a deadline of the view's pause passed, show what its default did; True if it did.

    `late`: an answer from this view was just refused as too late (the view is sending).
    """
    if view.state != "waiting" and not (late and view.state == "sending"):
        return False
    agent = view.chat.agent if view.chat is not None else None
    sid = view.response.session_id
    if agent is None or not sid or not view.response.snapshot_id:
        return False
    try:
        leaf = await agent.get_snapshot(session_id=sid)  # the engine applies a due default here, once
    except Exception:  # noqa: BLE001 - the form stays as it is; an answer will say what is wrong
        return False
    expired = [r for r in await answers_to(view) if r.kind == "expired"]
    if not expired or leaf is None or view.state not in ("waiting", "sending"):
        return False
    _show(view, expired, leaf, agent)
    return True


def _show(view: TurnView, records: list[AuditRecord], leaf: SessionSnapshot, agent: Any) -> None:
    by_call = {(r.name, r.ref): r for r in records}
    for form in view.forms:
        form.expired = by_call.get((form.interrupt.name, form.interrupt.ref))
        form.lock()
        form.status.value = ""
    messages = list(leaf.state.messages) if leaf.state is not None else []
    after = messages[after_pause(messages, view.response.message) :]
    last = next((m for m in reversed(after) if m.role == "model"), None)
    out = AgentOutput(
        session_id=leaf.session_id,
        snapshot_id=leaf.snapshot_id,
        message=last,
        finish_reason=leaf.finish_reason,
        error=leaf.error,
    )
    out._history = messages  # the record reads what ran from the history, as for an answer
    tools = "".join(
        tool_result_html(None, p.tool_response.output, name=p.tool_response.name)
        for m in after
        if m.role == "tool"
        for p in m.content
        if p.tool_response is not None
    )
    chat = Chat(agent, snapshot_id=leaf.snapshot_id)
    view._show_result(AgentResponse(out, chat=chat), chat, tools)
