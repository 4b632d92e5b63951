"""What a paused turn tells its agent's ``on_pause`` hook, and how a hook is called (never waited for)."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..types import Part

__all__ = ["OnPause", "PauseEvent", "fire"]

log = logging.getLogger("nb_agents.notify")

_TASKS: set[asyncio.Task[Any]] = set()  # background hooks: kept alive until they end


@dataclass(frozen=True)
class PauseEvent:
    """A turn that ended paused on interrupts.

    Attributes:
        agent: The agent's name.
        session_id: The session.
        snapshot_id: The paused snapshot (None for an agent without a store).
        interrupts: The paused tool-request parts.
        requested_by: The session's owner (who asked), when known.
    """

    agent: str
    session_id: str
    snapshot_id: str | None
    interrupts: Sequence[Part]
    requested_by: str | None = None


OnPause = Callable[[PauseEvent], "Awaitable[None] | None"]
"""An agent's ``on_pause`` hook: called when a turn pauses; an awaitable it returns runs in the background."""


def fire(hook: OnPause, event: PauseEvent) -> None:
    """Call `hook` without ever blocking or failing the turn (see the module docstring)."""
    try:
        result = hook(event)
    except Exception:
        log.exception("on_pause hook %r failed for session %s", hook, event.session_id)
        return
    if inspect.isawaitable(result):
        task = asyncio.ensure_future(result)
        _TASKS.add(task)
        task.add_done_callback(_done)


def _done(task: asyncio.Task[Any]) -> None:
    _TASKS.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("on_pause hook failed", exc_info=task.exception())
