"""The sync twins every agent has, local (`Agent`) or remote (`RemoteAgent`).

Each is a one-line delegation of its async verb through `nb_agents._sync`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from . import _sync
from .types import AgentInput, AgentOutput, SessionSnapshot

__all__ = ["AgentSyncTwins"]


class _AsyncVerbs(Protocol):
    run: Callable[..., Coroutine[Any, Any, AgentOutput]]
    run_text: Callable[..., Coroutine[Any, Any, AgentOutput]]
    get_snapshot: Callable[..., Coroutine[Any, Any, SessionSnapshot | None]]
    abort: Callable[..., Coroutine[Any, Any, str | None]]


class AgentSyncTwins:
    """Mixin: ``run_sync``, ``run_text_sync``, ``get_snapshot_sync``, ``abort_sync``."""

    def run_sync(self: _AsyncVerbs, input: AgentInput | str | None = None, **kwargs: Any) -> AgentOutput:
        return _sync.run(self.run(input, **kwargs))

    def run_text_sync(self: _AsyncVerbs, text: str, **kwargs: Any) -> AgentOutput:
        return _sync.run(self.run_text(text, **kwargs))

    def get_snapshot_sync(
        self: _AsyncVerbs, snapshot_id: str | None = None, *, session_id: str | None = None
    ) -> SessionSnapshot | None:
        return _sync.run(self.get_snapshot(snapshot_id, session_id=session_id))

    def abort_sync(self: _AsyncVerbs, snapshot_id: str) -> str | None:
        return _sync.run(self.abort(snapshot_id))
