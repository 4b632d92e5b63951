"""Answers from an inbox: approve, deny or cancel waiting interrupts, many at once, each once.

The inbox lists `InboxItem` rows (`Agent.pending(...).items()`: every waiting
interrupt, across sessions and agents). This module turns a person's verb on
a row into the answer part its interrupt takes (`quick_answer`), and sends a
batch of them (`answer_items`): the rows of one paused turn go in one resume
(``partial=True`` when the batch leaves some of its interrupts waiting), so
every turn is claimed once. Sending the same batch again is harmless: the
store's exactly-once resume replays each turn's first outcome, and an answer
that differs from the one taken is refused, per turn, without running anything.

What a verb means for an interrupt:

* **approve**: a call held by `ToolApproval` is approved (``always=True`` with
  a ``scope`` makes a per-session rule); a question whose answer is
  approval-shaped (``{"approved": bool, ...}``) is answered yes; a plain tool
  that paused itself continues. A question that needs an answer of its own
  (a form's fields) cannot be approved from a row: answer it in its form.
* **deny**: the approval's "no" (the model reads the reason); for a question
  that is not approval-shaped, a denial the tool's output schema accepts.
* **cancel**: any interrupt (`AgentInterrupt.cancel`): nothing runs.

The same module holds the wire form of a listing (`turn_to_wire`,
`turn_from_wire`), what ``POST /<agent>/pending`` answers and
`RemoteAgent.pending` reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import TypeAdapter, ValidationError

from .errors import InvalidArgumentError, NbAgentsError
from .interrupts import AgentInterrupt, ApprovalHold
from .listings import InboxItem, PendingTurn
from .types import Message, Part, SessionSnapshot

if TYPE_CHECKING:
    from .protocol import BaseAgent
    from .responses import AgentResponse
    from .tools import Tool

__all__ = [
    "VERBS",
    "Outcome",
    "Verb",
    "answer_items",
    "quick_answer",
    "turn_from_wire",
    "turn_to_wire",
    "verbs_for",
]

Verb = Literal["approve", "deny", "cancel"]
VERBS: tuple[Verb, ...] = ("approve", "deny", "cancel")
Kind = Literal["respond", "restart"]


def _approval_shaped(schema: Any) -> bool:
    """An object whose one required field is the bool ``approved`` (as the notebook forms read it)."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return False
    props = schema.get("properties") or {}
    return schema.get("required") == ["approved"] and props.get("approved", {}).get("type") == "boolean"


def _tool_of(item: InboxItem) -> Tool | None:
    return item.turn.agent.tools.get(item.tool)


def _shape(item: InboxItem) -> str:
    """``hold``, ``approve-respond``, ``approve-restart``, ``continue`` or ``answer`` (needs its form)."""
    if isinstance(item.interrupt, ApprovalHold):
        return "hold"
    tool = _tool_of(item)
    if tool is None:
        return "answer"
    if tool.kind == "interrupt":
        return "approve-respond" if _approval_shaped(tool.output_schema) else "answer"
    if tool.kind == "resumable":
        rt = tool.resume_type
        resume = TypeAdapter(rt).json_schema() if rt is not None else None
        return "approve-restart" if _approval_shaped(resume) else "answer"
    return "continue"


def verbs_for(item: InboxItem) -> tuple[Verb, ...]:
    """The verbs a row offers: approve and deny where they mean something, cancel always."""
    if _shape(item) == "answer":
        return ("deny", "cancel") if _denial(item, "") is not None else ("cancel",)
    return VERBS


def _denial(item: InboxItem, reason: str) -> Any:
    msg = f"The user denied the call to '{item.tool}'" + (f": {reason}" if reason else ".")
    tool = _tool_of(item)
    for output in ({"error": msg}, msg):
        try:
            if tool is not None:
                tool.check_output(output)
            return output
        except ValidationError:
            continue
    return None


def quick_answer(
    item: InboxItem,
    verb: Verb,
    *,
    reason: str | None = None,
    always: bool = False,
    scope: str | None = None,
) -> tuple[Kind, Part]:
    """The answer `verb` gives `item`'s interrupt: which list it goes in, and the part.

    Args:
        item: The waiting interrupt.
        verb: ``"approve"``, ``"deny"`` or ``"cancel"``.
        reason: Why (a deny's or a cancel's words for the model).
        always: With approve of a held call: a per-session rule too.
        scope: That rule's scope (``"tool"`` or ``"arguments"``).

    Raises:
        InvalidArgumentError: The verb does not fit the interrupt (a question that
            needs an answer of its own cannot be approved from a row).
    """
    if verb not in VERBS:
        raise InvalidArgumentError(f"an inbox answer is one of {', '.join(VERBS)}; got {verb!r}")
    i: AgentInterrupt = item.interrupt
    if reason is not None and not isinstance(reason, str):
        raise InvalidArgumentError(f"reason must be a str, got {type(reason).__name__}")
    if verb == "cancel":
        return "respond", i.cancel(reason or None)
    shape = _shape(item)
    if (always or scope is not None) and (verb != "approve" or shape != "hold"):
        raise InvalidArgumentError(
            f"always=True makes a rule for a call held for approval; '{item.tool}' here is not held that way"
        )
    if shape == "hold":
        assert isinstance(i, ApprovalHold)
        if verb == "approve":
            return "restart", i.approve(always=always, scope=scope)
        msg = f"The user denied the call to '{i.name}': {reason}" if reason else None
        return "respond", i.deny({"error": msg} if msg else None)
    if shape in ("approve-respond", "approve-restart"):
        value: dict[str, Any] = {"approved": verb == "approve"}
        return ("respond", i.respond(value)) if shape == "approve-respond" else ("restart", i.restart(value))
    if shape == "continue" and verb == "approve":
        return "restart", i.restart(True)
    if verb == "deny":
        output = _denial(item, reason or "")
        if output is not None:
            return "respond", i.respond(output)
    raise InvalidArgumentError(
        f"'{item.tool}' asks a question that needs an answer of its own; answer it in its form, or cancel it"
    )


@dataclass
class Outcome:
    """What sending the answers of one paused turn came to.

    Attributes:
        turn: The paused turn.
        items: Its rows the batch answered.
        response: The turn's response (also a replay of the first, if sent before).
        error: Why the answer was refused (another answer went first, a deadline
            passed, the caller may not answer it), else None.
    """

    turn: PendingTurn
    items: list[InboxItem] = field(default_factory=list)
    response: AgentResponse | None = None
    error: NbAgentsError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def replayed(self) -> bool:
        """Whether `response` replays what the same answer, sent before (by anyone), came to:
        nothing ran for this send. Known for an agent in this process; a remote one says False."""
        return self.response is not None and self.response.raw._replayed


async def answer_items(
    answers: Sequence[tuple[InboxItem, Kind, Part]],
    *,
    context: dict[str, Any] | None = None,
    answered_by: str | None = None,
) -> list[Outcome]:
    """Send a batch of answers: one resume per paused turn, each taking effect once.

    Args:
        answers: ``(item, kind, part)`` triples (`quick_answer` builds the kind and part).
        context: The request context to answer with (in-process agents only;
            a remote agent's server derives it from the request).
        answered_by: Who answers, for the audit (``resume.metadata.answeredBy``).

    Returns:
        One `Outcome` per turn, in the order their first row came.

    Example:
        >>> rows = (await agent.pending(tool="transfer")).items()        # doctest: +SKIP
        >>> await answer_items([(r, *quick_answer(r, "approve")) for r in rows])  # doctest: +SKIP
    """
    groups: dict[tuple[int, str], Outcome] = {}
    parts: dict[tuple[int, str], tuple[list[Part], list[Part]]] = {}
    for item, kind, part in answers:
        key = (id(item.turn.agent), item.snapshot_id)
        if key not in groups:
            groups[key] = Outcome(item.turn)
            parts[key] = ([], [])
        groups[key].items.append(item)
        (parts[key][0] if kind == "respond" else parts[key][1]).append(part)
    meta = {"answeredBy": answered_by} if answered_by else None
    for key, outcome in groups.items():
        respond, restart = parts[key]
        turn = outcome.turn
        partial = len({(i.tool, i.interrupt.ref) for i in outcome.items}) < len(turn.interrupts)
        try:
            outcome.response = await turn.chat().resume(
                respond, restart, meta, partial=partial, context=context
            )
        except NbAgentsError as exc:
            outcome.error = exc
    return list(groups.values())


# -- the wire -----------------------------------------------------------------------------------
def turn_to_wire(turn: PendingTurn) -> dict[str, Any]:
    """A paused turn as ``POST /<agent>/pending`` lists it (Genkit's camelCase)."""
    wire: dict[str, Any] = {
        "sessionId": turn.session_id,
        "snapshotId": turn.snapshot_id,
        "status": turn.status,
        "message": turn.message.to_wire(),
    }
    if turn.requested_by is not None:
        wire["requestedBy"] = turn.requested_by
    if turn.paused_at is not None:
        wire["pausedAt"] = turn.paused_at
    if turn.only is not None:
        wire["tools"] = sorted(turn.only)
    return wire


def turn_from_wire(agent: BaseAgent, data: Any) -> PendingTurn:
    """A listed turn read back (by `RemoteAgent.pending`), its chat on `agent`."""
    if not isinstance(data, dict) or not isinstance(data.get("snapshotId"), str):
        raise NbAgentsError(f"a pending listing holds turns with a snapshotId, got {data!r}"[:300])
    message = Message.model_validate(data.get("message"))
    snap = SessionSnapshot(
        snapshot_id=data["snapshotId"],
        session_id=data.get("sessionId"),
        owner=data.get("requestedBy"),
        updated_at=data.get("pausedAt"),
    )
    turn = PendingTurn(agent, snap, message)
    status = data.get("status")
    if status in ("failed", "aborted"):
        turn.status = "failed" if status == "failed" else "aborted"
    tools = data.get("tools")
    if isinstance(tools, list):
        turn.only = frozenset(t for t in tools if isinstance(t, str))
    return turn
