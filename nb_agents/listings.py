"""What `Agent.pending` and `Agent.audit` return: listings that render.

`PendingTurn` is a paused turn waiting in the store, with `AgentInterrupt`
builders for its answers and a chat positioned on it, who asked (the session's
owner), when it paused and how long it has waited; its `PendingTurn.items`
are its waiting interrupts as inbox rows (`InboxItem`: session, tool, input,
summary, age, deadline, who asked). `PendingTurns` and `AuditTrail` are lists
that display as tables in a notebook. `select` applies the inbox filters
(``tool=``, ``older_than=``) to a listing.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ._display import bundle
from .chat import Chat
from .errors import FailedPreconditionError, InvalidArgumentError
from .expiry import now as utc_now
from .expiry import parse
from .interrupts import AgentInterrupt, ApprovalHold
from .nested import NestedInterrupt, interrupts_of
from .protocol import BaseAgent
from .responses import AgentResponse
from .stores.base import AuditRecord
from .types import Message, SessionSnapshot, ToolResume

if TYPE_CHECKING:
    from .render.summary import Summary

__all__ = ["AuditTrail", "InboxItem", "PendingTurn", "PendingTurns", "select"]


class PendingTurn:
    """A paused turn waiting in the store, with its interrupts.

    Attributes:
        snapshot: The interrupted snapshot.
        message: The model message holding the interrupted calls.
        interrupts: `AgentInterrupt` builders for the answers.
        status: ``"waiting"`` for an answer, or ``"failed"`` / ``"aborted"`` when an
            answer was given and its attempt ended so after its tools started:
            then `retry` runs it once more (the same answer sent again only
            replays that outcome).
        attempt: The failed or aborted attempt's snapshot (its ``error``), else None.
        requested_by: Who asked: the session's owner (``context["auth"]["uid"]`` of
            its first turn), or None when it has none.
        paused_at: When the turn paused (ISO 8601 UTC), if known.
        agent_name, session_id, snapshot_id: Whose turn it is, and where.
        only: The tools the listing was filtered to (``pending(tool=...)``), or None.
    """

    only: frozenset[str] | None = None

    def __init__(
        self,
        agent: BaseAgent,
        snapshot: SessionSnapshot,
        message: Message,
        attempt: SessionSnapshot | None = None,
    ) -> None:
        self.agent = agent
        self.agent_name = agent.name
        self.snapshot = snapshot
        self.session_id, self.snapshot_id = snapshot.session_id, snapshot.snapshot_id
        self.message = message
        self.interrupts = interrupts_of(message.interrupts())
        self.attempt = attempt
        self.status = attempt.status if attempt is not None and attempt.status else "waiting"
        self.requested_by: str | None = snapshot.owner
        self.paused_at: str | None = snapshot.updated_at or snapshot.created_at

    @property
    def age(self) -> timedelta | None:
        """How long the turn has waited (None when the store kept no time)."""
        since = parse(self.paused_at) if self.paused_at else None
        return utc_now() - since if since is not None else None

    @property
    def deadline(self) -> datetime | None:
        """The earliest deadline of its interrupts (UTC), or None."""
        found = [i.expires_at for i in self.interrupts if i.expires_at is not None]
        return min(found) if found else None

    @property
    def items(self) -> list[InboxItem]:
        """Its waiting interrupts as inbox rows (those of the listing's ``tool=`` filter, if any)."""
        kept = [i for i in self.interrupts if self.only is None or i.name in self.only]
        return [InboxItem(self, i) for i in kept]

    def chat(self) -> Chat:
        """A chat positioned on the paused turn, ready for ``resume`` (or ``retry``)."""
        chat = self.agent.chat(snapshot_id=self.snapshot_id)
        if self.attempt is not None and self.attempt.answer is not None:
            chat._last_resume = ToolResume.model_validate(self.attempt.answer)
        return chat

    async def retry(self) -> AgentResponse:
        """Run the failed or aborted attempt's answer once more (a new, audited attempt)."""
        if self.attempt is None:
            raise FailedPreconditionError("this turn waits for an answer: there is no attempt to retry")
        return await self.chat().retry()

    def __repr__(self) -> str:
        names = ", ".join(i.name for i in self.interrupts)
        return f"PendingTurn(session_id={self.session_id!r}, interrupts=[{names}], status={self.status!r})"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return bundle(self)


class InboxItem:
    """One waiting interrupt of a paused turn: a row of the inbox.

    Attributes:
        turn: The paused turn it belongs to (answer it through ``turn.chat()``).
        interrupt: The interrupt (`ApprovalHold` for a call held for approval),
            with the builders of its answers (``approve``, ``deny``, ``cancel``, ...).
        agent_name, session_id, snapshot_id, requested_by: The turn's (see `PendingTurn`).
        tool, input, deadline: The interrupt's tool name, its input, and when it
            expires (UTC; None: never).
    """

    def __init__(self, turn: PendingTurn, interrupt: AgentInterrupt) -> None:
        self.turn = turn
        # a sub-agent's question keeps its view (its answers go through the call that waits on it)
        hold = (
            None
            if isinstance(interrupt, ApprovalHold | NestedInterrupt)
            else ApprovalHold.claim(interrupt.part)
        )
        self.interrupt: AgentInterrupt = hold if hold is not None else interrupt
        self.agent_name = turn.agent_name
        self.session_id = turn.session_id
        self.snapshot_id = turn.snapshot_id
        self.requested_by = turn.requested_by
        self.tool = self.interrupt.name
        self.input = self.interrupt.input
        self.deadline = self.interrupt.expires_at

    @property
    def key(self) -> tuple[str, str, str, str | None]:
        """What identifies the row: (agent, snapshot id, tool, ref)."""
        return (self.agent_name, self.snapshot_id, self.tool, self.interrupt.ref)

    @property
    def age(self) -> timedelta | None:
        """How long its turn has waited (None when the store kept no time)."""
        return self.turn.age

    @property
    def summary(self) -> Summary:
        """What the notebook form leads with: a title, the question, the arguments as rows."""
        from .render.summary import interrupt_summary

        tool = self.turn.agent.tools.get(self.tool)
        return interrupt_summary(
            self.interrupt.part,
            input_schema=tool.input_schema if tool is not None else None,
            description=tool.description if tool is not None else None,
        )

    def __repr__(self) -> str:
        return (
            f"InboxItem(agent={self.agent_name!r}, session_id={self.session_id!r}, tool={self.tool!r}, "
            f"requested_by={self.requested_by!r})"
        )


def _tools(tool: str | Collection[str] | None) -> frozenset[str] | None:
    if tool is None:
        return None
    names = frozenset([tool]) if isinstance(tool, str) else frozenset(tool)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise InvalidArgumentError(f"tool= takes a tool name or a list of names, got {tool!r}")
    return names


def _seconds(older_than: timedelta | float | None) -> timedelta | None:
    if older_than is None:
        return None
    if isinstance(older_than, bool) or not isinstance(older_than, timedelta | int | float):
        raise InvalidArgumentError(f"older_than= takes a timedelta or seconds, got {older_than!r}")
    span = older_than if isinstance(older_than, timedelta) else timedelta(seconds=older_than)
    if span < timedelta(0):
        raise InvalidArgumentError(f"older_than= must not be negative, got {older_than!r}")
    return span


def select(
    turns: Sequence[PendingTurn],
    *,
    tool: str | Collection[str] | None = None,
    older_than: timedelta | float | None = None,
) -> list[PendingTurn]:
    """The turns with a waiting interrupt of `tool` (a name or names) that waited at least `older_than`.

    Example:
        >>> select([], tool="transfer", older_than=60)
        []
    """
    names, span = _tools(tool), _seconds(older_than)
    out = []
    for turn in turns:
        if names is not None and not any(i.name in names for i in turn.interrupts):
            continue
        age = turn.age
        if span is not None and (age is None or age < span):
            continue
        turn.only = names
        out.append(turn)
    return out


class PendingTurns(list[PendingTurn]):
    """What `Agent.pending` returns: a list that renders as the waiting interrupts."""

    def items(self) -> list[InboxItem]:
        """Every waiting interrupt of the listed turns, one `InboxItem` each (the inbox's rows)."""
        return [item for turn in self if turn.status == "waiting" for item in turn.items]

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return bundle(self)


class AuditTrail(list[AuditRecord]):
    """What `Agent.audit` returns: a list that renders as a table."""

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return bundle(self)
