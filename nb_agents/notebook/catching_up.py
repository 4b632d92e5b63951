"""Where a chat goes when its question was answered elsewhere (another cell, tab or process).

A `ChatWidget` whose form collapsed to "Already answered (...)" would send its
next message from the old pause, branching the conversation away from the
answer that went first. `where_it_went` reads where that answer went: the
turn each recorded answer resumed (the last of them, for partial answers),
and the session's latest turn when it carries on from there. The widget then
shows what followed and continues from it; a plain `TurnView` moves the chat
it was given there (`move_chat`), so the next ``chat.send`` goes on from the
answer too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..chat import Chat
from ..turns import DetachedTask
from .partial import follow

if TYPE_CHECKING:
    from ..protocol import BaseAgent
    from ..types import Message, SessionSnapshot

__all__ = [
    "RUNNING_POLL",
    "RUNNING_WAIT",
    "chat_at",
    "extends",
    "move_chat",
    "stale_view",
    "what_followed",
    "where_it_went",
]

RUNNING_POLL = 0.25  # seconds between reads of a turn that another answer started, while it runs
RUNNING_WAIT = 300.0  # how long a chat waits for that turn to end before it stays where it was


def stale_view(view: Any) -> Any:
    """The view (`view` or a re-pause below it) that collapsed to "Already answered", if any."""
    while view is not None and view.state != "stale":
        view = view.child
    return view


def _wire(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.to_wire() for m in messages]


def extends(longer: SessionSnapshot, shorter: SessionSnapshot) -> bool:
    """Whether `longer`'s conversation goes on from `shorter`'s.

    A paused last message of `shorter` reads differently once answered (its
    calls carry ``resolvedInterrupt``), so it is compared by position only.
    """
    a = longer.state.messages if longer.state is not None else []
    b = shorter.state.messages if shorter.state is not None else []
    if len(a) < len(b):
        return False
    n = len(b) - 1 if shorter.finish_reason == "interrupted" else len(b)
    return _wire(a[:n]) == _wire(b[:n])


async def where_it_went(agent: BaseAgent, child_ids: Iterable[str]) -> SessionSnapshot | None:
    """The snapshot the conversation went on to after the answers that made the turns `child_ids`
    (an audit record's ``child_id``); None if unreadable."""
    ends: list[SessionSnapshot] = []
    for child_id in dict.fromkeys(child_ids):
        snap = await agent.get_snapshot(child_id)
        if snap is not None and snap.state is not None:
            ends.append(snap)
    if not ends:
        return None
    end = max(ends, key=lambda s: len(s.state.messages) if s.state is not None else 0)
    if end.session_id:  # the conversation may have gone further since: follow it when it goes on from here
        latest = await agent.get_snapshot(session_id=end.session_id)
        if latest is not None and latest.snapshot_id != end.snapshot_id and extends(latest, end):
            return latest
    return end


async def what_followed(agent: BaseAgent, view: Any) -> tuple[SessionSnapshot, list[Message]] | None:
    """Where the conversation went after `view`'s pause was answered elsewhere, and the messages
    since that pause; None while it cannot be followed (unreadable, still running, or failed).

    Known from the audit, that turn has ended (its records are written with its last row);
    known only from the refusal of this view's own answer, it may still run: its end is
    awaited (polled, up to `RUNNING_WAIT` seconds).
    """
    stale = stale_view(view)
    if stale is None:
        return None
    if stale.prior:  # where the audit says the answers went
        went = [r.child_id for r in stale.prior if r.child_id]
    elif stale.went:  # no audit (a remote agent): where the refusal of this view's answer said
        try:  # the first answer's turn may still run: its end first
            await DetachedTask(agent, stale.went).wait(interval=RUNNING_POLL, timeout=RUNNING_WAIT)
        except TimeoutError:
            return None
        went = [stale.went]
    else:
        return None
    snap = await where_it_went(agent, went)
    if snap is None or snap.state is None or snap.finish_reason in (None, "failed", "aborted", "detached"):
        return None
    asked = await agent.get_snapshot(
        stale.prior[0].snapshot_id if stale.prior else stale.response.snapshot_id
    )
    if asked is None or asked.state is None or not extends(snap, asked):
        return None
    return snap, list(snap.state.messages[len(asked.state.messages) :])


async def move_chat(view: Any) -> None:
    """Move the chat `view` was given to where the answer given elsewhere went, if the chat still
    stands at `view`'s pause then; where it cannot be followed yet, the chat stays where it is."""
    chat = view.chat
    try:
        found = await what_followed(chat.agent, view)
    except Exception:  # noqa: BLE001 - the form says who answered; the chat stays where it was
        return
    if found is not None and chat.snapshot_id == view.response.snapshot_id:
        follow(chat, chat_at(chat.agent, found[0]))


def chat_at(agent: BaseAgent, snap: SessionSnapshot) -> Chat:
    """A chat on `snap`, where the conversation went: asking, if it paused there."""
    return Chat.at(agent, snap, paused=snap.finish_reason == "interrupted")
