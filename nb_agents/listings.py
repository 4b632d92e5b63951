"""What `Agent.pending` and `Agent.audit` return: listings that render.

`PendingTurn` is a paused turn waiting in the store, with `AgentInterrupt`
builders for its answers and a chat positioned on it; `PendingTurns` and
`AuditTrail` are lists that display as tables in a notebook.
"""

from __future__ import annotations

from typing import Any

from ._display import bundle
from .chat import Chat
from .endpoint import BaseAgent
from .errors import FailedPreconditionError
from .nested import interrupts_of
from .responses import AgentResponse
from .stores.base import AuditRecord
from .types import Message, SessionSnapshot, ToolResume

__all__ = ["AuditTrail", "PendingTurn", "PendingTurns"]


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
    """

    def __init__(
        self,
        agent: BaseAgent,
        snapshot: SessionSnapshot,
        message: Message,
        attempt: SessionSnapshot | None = None,
    ) -> None:
        self.agent = agent
        self.snapshot = snapshot
        self.message = message
        self.interrupts = interrupts_of(message.interrupts())
        self.attempt = attempt
        self.status = attempt.status if attempt is not None and attempt.status else "waiting"

    @property
    def session_id(self) -> str | None:
        return self.snapshot.session_id

    @property
    def snapshot_id(self) -> str:
        return self.snapshot.snapshot_id

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


class PendingTurns(list[PendingTurn]):
    """What `Agent.pending` returns: a list that renders as the waiting interrupts."""

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return bundle(self)


class AuditTrail(list[AuditRecord]):
    """What `Agent.audit` returns: a list that renders as a table."""

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return bundle(self)
