"""Deadlines in the engine: the answer an expired pause gets, and the refusal of a late one.

A pause past its ``metadata.expiresAt`` is answered by its declared default
(``metadata.onExpiry``; `nb_agents.expiry`), built here as an ordinary answer
part marked ``metadata.expired = {"at": <deadline>, "applied": <default>}``.
Every process builds the same part from the same snapshot, so the resume it
makes has one digest: the exactly-once claim lets one of them run it and the
others replay its outcome, as for a person's answer sent twice.

`check_deadlines` runs before anything else about a resume: an answer to a pause
whose deadline passed is refused (``FAILED_PRECONDITION``, naming the deadline
and the default), and an answer marked as a default must be exactly the default
of a pause that has expired.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from itertools import chain
from typing import Any

from .._json import canonical
from ..errors import FailedPreconditionError, InvalidArgumentError
from ..expiry import default_on, denial_message, describe, expires_at, is_due, now
from ..interrupts import respond_part, restart_part
from ..types import Message, Part, ToolResume

__all__ = ["check_deadlines", "due_parts", "expiry_answer", "expiry_resume", "has_deadline"]


def _latest(messages: Sequence[Message]) -> Message | None:
    last = messages[-1] if messages else None
    return last if last is not None and last.role == "model" and last.tool_requests else None


def has_deadline(messages: Sequence[Message]) -> bool:
    """Whether the latest message is a pause with a deadline (the cheap test before any other)."""
    if not messages or messages[-1].role != "model":
        return False
    return any(p.metadata and "expiresAt" in p.metadata for p in messages[-1].content)


def due_parts(messages: Sequence[Message], at: datetime | None = None) -> list[Part]:
    """The pauses of the latest model message whose deadline has passed."""
    if not has_deadline(messages):
        return []  # the common turn: no pause with a deadline, no clock read
    last = _latest(messages)
    if last is None:
        return []
    at = at or now()
    return [p for p in last.tool_requests if is_due(p, at)]


def expiry_answer(request: Part) -> tuple[str, Part]:
    """The declared default of a paused `request` as an answer: ``("respond"|"restart", part)``."""
    default = default_on(request)
    if "approve" in default:
        kind, part = "restart", restart_part(request, resumed={"toolApproved": True})
        applied: dict[str, Any] = {"approve": True}
    elif "respond" in default:
        kind, part = "respond", respond_part(request, default["respond"], mark=False)
        applied = {"respond": default["respond"]}
    else:
        message = denial_message(request)
        kind, part = "respond", respond_part(request, {"error": message}, mark=False)
        applied = {"deny": message}
    return kind, part.with_metadata(expired={"at": expires_at(request), "applied": applied})


def expiry_resume(messages: Sequence[Message], at: datetime | None = None) -> ToolResume | None:
    """The answer that applies the defaults of every expired pause of the turn, or None if none is due."""
    due = due_parts(messages, at)
    if not due:
        return None
    resume = ToolResume()
    for request in due:
        kind, part = expiry_answer(request)
        (resume.restart if kind == "restart" else resume.respond).append(part)
    return resume


def _ref(ref: str | None) -> str:
    return f" (ref: {ref})" if ref else ""


def check_deadlines(resume: ToolResume, messages: Sequence[Message], at: datetime | None = None) -> None:
    """Refuse an answer to an expired pause, and a default that is not one (see the module doc)."""
    marked = False  # an answer that says it is a default (a loop, not any(...): every resume runs it)
    for p in chain(resume.respond, resume.restart):
        if p.metadata and "expired" in p.metadata:
            marked = True
            break
    if not marked and not has_deadline(messages):
        return  # no deadline, and no answer that says it is a default: nothing to check
    last = _latest(messages)
    if last is None:
        return  # resume validation says what is wrong
    latest = {(p.tool_request.name, p.tool_request.ref): p for p in last.tool_requests if p.tool_request}
    at = at or now()
    answers = [
        (p, (p.tool_response.name, p.tool_response.ref)) for p in resume.respond if p.tool_response
    ] + [(p, (p.tool_request.name, p.tool_request.ref)) for p in resume.restart if p.tool_request]
    for answer, key in answers:
        original = latest.get(key)
        if original is None or not original.is_interrupt:
            continue  # resume validation refuses it
        marked = "expired" in (answer.metadata or {})
        name, ref = key
        if is_due(original, at):
            if not marked:
                when = expires_at(original)
                raise FailedPreconditionError(
                    f"The interrupt '{name}'{_ref(ref)} expired at {when}: it takes no answer any more, "
                    f"and its default applies instead: {describe(original)}.",
                    details={"expiresAt": when, "onExpiry": default_on(original), "tool": name, "ref": ref},
                )
            if canonical(answer.to_wire()) != canonical(expiry_answer(original)[1].to_wire()):
                raise InvalidArgumentError(
                    f"the answer to '{name}'{_ref(ref)} is marked as its default on expiry but is not the "
                    "default the pause declared"
                )
        elif marked:
            raise InvalidArgumentError(
                f"the answer to '{name}'{_ref(ref)} is marked as its default on expiry, but that interrupt "
                "has not expired"
            )
