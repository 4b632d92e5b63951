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
from .interrupts import AgentInterrupt
from .stores.base import AuditRecord
from .types import Message, SessionSnapshot

__all__ = ["AuditTrail", "PendingTurn", "PendingTurns"]


class PendingTurn:
    """A paused turn waiting in the store, with its interrupts.

    Attributes:
        snapshot: The interrupted snapshot.
        message: The model message holding the interrupted calls.
        interrupts: `AgentInterrupt` builders for the answers.
    """

    def __init__(self, agent: BaseAgent, snapshot: SessionSnapshot, message: Message) -> None:
        self.agent = agent
        self.snapshot = snapshot
        self.message = message
        self.interrupts = [AgentInterrupt(p) for p in message.interrupts()]

    @property
    def session_id(self) -> str | None:
        return self.snapshot.session_id

    @property
    def snapshot_id(self) -> str:
        return self.snapshot.snapshot_id

    def chat(self) -> Chat:
        """A chat positioned on the paused turn, ready for ``resume``."""
        return self.agent.chat(snapshot_id=self.snapshot_id)

    def __repr__(self) -> str:
        names = ", ".join(i.name for i in self.interrupts)
        return f"PendingTurn(session_id={self.session_id!r}, interrupts=[{names}])"

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
