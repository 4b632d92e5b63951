"""What a chat turn gives back: `AgentResponse`, `AgentChunk`, `AgentInterrupt`.

These wrap the wire values (`AgentOutput`, `AgentStreamChunk`) with the
conveniences of Genkit's client API: ``text``, ``interrupts`` (`AgentInterrupt`
views, defined with the answer builders in `nb_agents.interrupts`, re-exported
here), ``finish_message``.
"""

from __future__ import annotations

from typing import Any

from ._display import bundle, show
from .interrupts import AgentInterrupt
from .types import AgentOutput, AgentStreamChunk, Artifact, Part

__all__ = ["AgentChunk", "AgentInterrupt", "AgentResponse"]


class AgentResponse:
    """The result of one chat turn.

    Attributes:
        raw: The `AgentOutput` on the wire.
        message: The reply (for a paused turn: the model message holding the
            interrupted tool requests).
        finish_reason: One of the nine agent finish reasons.
        snapshot_id: Where the turn ended (server-managed agents).
        session_id: The conversation id.
        state: The full state blob (client-managed agents).
        custom: The custom state after the turn.
        artifacts: The session's artifacts.
        chat: The `Chat` that produced the response (None for a bare output).
    """

    def __init__(self, raw: AgentOutput, *, custom: Any = None, chat: Any = None) -> None:
        self.raw = raw
        self.chat = chat  # the Chat that produced it: what a notebook form resumes
        self.message = raw.message
        self.finish_reason = raw.finish_reason or "unknown"
        self.snapshot_id = raw.snapshot_id
        self.session_id = raw.session_id
        self.state = raw.state
        self.custom = raw.state.custom if raw.state is not None else custom
        self.artifacts: list[Artifact] = list(raw.artifacts or [])
        self.error = raw.error

    @property
    def text(self) -> str:
        return self.message.text if self.message is not None else ""

    @property
    def finish_message(self) -> str | None:
        return self.error.message if self.error is not None else None

    @property
    def tool_requests(self) -> list[Part]:
        return self.message.tool_requests if self.message is not None else []

    @property
    def interrupts(self) -> list[AgentInterrupt]:
        """The paused tool calls; empty unless ``finish_reason == "interrupted"``."""
        return [AgentInterrupt(p) for p in self.raw.interrupts()]

    def __repr__(self) -> str:
        return (
            f"AgentResponse(finish_reason={self.finish_reason!r}, text={self.text!r}, "
            f"interrupts={len(self.interrupts)}, snapshot_id={self.snapshot_id!r})"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """Static text and HTML; in a live kernel, the forms of `nb_agents.notebook` (`TurnView`)."""
        return bundle(self)

    def _ipython_display_(self) -> None:
        """In a cell: the live view (it becomes a static record once answered), else the static bundle."""
        show(self)


class AgentChunk:
    """One streamed chunk of a chat turn.

    Attributes:
        raw: The `AgentStreamChunk` on the wire.
        text: The model text in this chunk ("" for other kinds).
        accumulated_text: All model text of the turn so far.
        custom: The custom state after a ``customPatch`` chunk, else None.
    """

    def __init__(self, raw: AgentStreamChunk, *, accumulated_text: str, custom: Any = None) -> None:
        self.raw = raw
        self.model_chunk = raw.model_chunk
        self.custom_patch = raw.custom_patch
        self.artifact = raw.artifact
        self.turn_end = raw.turn_end
        self.text = (
            raw.model_chunk.text if raw.model_chunk is not None and raw.model_chunk.role != "tool" else ""
        )
        self.accumulated_text = accumulated_text
        self.custom = custom

    @property
    def tool_requests(self) -> list[Part]:
        mc = self.model_chunk
        return [p for p in mc.content if p.tool_request is not None] if mc is not None else []

    @property
    def interrupts(self) -> list[AgentInterrupt]:
        mc = self.model_chunk
        return [AgentInterrupt(p) for p in mc.interrupts()] if mc is not None else []

    def __repr__(self) -> str:
        kind = next(
            k for k in ("model_chunk", "custom_patch", "artifact", "turn_end") if getattr(self, k) is not None
        )
        return f"AgentChunk({kind}, text={self.text!r})"
