"""What a chat turn gives back: `AgentResponse`, `AgentChunk`, `AgentInterrupt`.

These wrap the wire values (`AgentOutput`, `AgentStreamChunk`, interrupted
tool-request parts) with the conveniences of Genkit's client API: ``text``,
``interrupts``, and the ``respond`` / ``restart`` / ``approve`` builders, which
build answer parts and never send anything.
"""

from __future__ import annotations

from typing import Any

from .interrupts import respond_part, restart_part
from .types import AgentOutput, AgentStreamChunk, Artifact, Part

__all__ = ["AgentChunk", "AgentInterrupt", "AgentResponse"]


class AgentInterrupt:
    """One paused tool call of a response, with builders for the answer.

    Attributes:
        name: The tool's name.
        ref: The call's ref, if the model gave one.
        input: What the model passed the tool (shown to the human).
        data: The pause payload (``metadata.interrupt``), a dict or None.
        part: The interrupted tool-request part itself.
    """

    def __init__(self, part: Part) -> None:
        assert part.tool_request is not None
        self.part = part
        self.name = part.tool_request.name
        self.ref = part.tool_request.ref
        self.input = part.tool_request.input
        data = (part.metadata or {}).get("interrupt")
        self.data: dict[str, Any] | None = data if isinstance(data, dict) else None

    def respond(self, output: Any) -> Part:
        """A ``toolResponse`` part supplying the tool's output. Does not send."""
        return respond_part(self.part, output, mark=False)

    def restart(self, resumed: Any = None, replace_input: Any = None) -> Part:
        """A ``toolRequest`` part that runs the tool again. Does not send.

        Args:
            resumed: What the tool sees as ``ctx.resumed`` (its reply).
            replace_input: A new input for the call (the original is kept
                in ``replacedInput`` so the server can check it).
        """
        return restart_part(self.part, resumed=resumed, replace_input=replace_input, mark_resumed=False)

    def approve(self) -> Part:
        """Approve a call held by `ToolApproval`. Goes in ``restart``."""
        return restart_part(self.part, resumed={"toolApproved": True})

    def __repr__(self) -> str:
        kind = type(self).__name__
        return f"{kind}(name={self.name!r}, ref={self.ref!r}, input={self.input!r}, data={self.data!r})"


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
        """Static text and HTML; in a live kernel, also the `TurnView` widget (forms)."""
        from .render import live_widgets, response_bundle

        if self.chat is not None and live_widgets():
            from .notebook.view import TurnView

            return TurnView(self, self.chat)._repr_mimebundle_()
        return dict(response_bundle(self))


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
