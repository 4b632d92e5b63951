"""How a turn's run step ended (`Ran`, `Aborted`, `Failed`), and what a pause tells ``on_pause``."""

from __future__ import annotations

from dataclasses import dataclass

from ..notify import PauseEvent
from ..session import Session
from ..types import Message

__all__ = ["Aborted", "Failed", "Outcome", "Ran", "pause_event"]


@dataclass(frozen=True, slots=True)
class Ran:
    """The handler finished: its reply (or None)."""

    reply: Message | None


@dataclass(frozen=True, slots=True)
class Aborted:
    """The turn was aborted while the handler ran."""


@dataclass(frozen=True, slots=True)
class Failed:
    """The handler raised."""

    error: BaseException


Outcome = Ran | Aborted | Failed


def pause_event(agent: str, session: Session, snapshot_id: str | None, owner: str | None) -> PauseEvent:
    """What the ``on_pause`` hook is told of a turn that just paused."""
    last = session.last_model()
    parts = last.interrupts() if last is not None else []
    return PauseEvent(agent, session.session_id, snapshot_id, parts, owner)
