"""Wire types: Genkit's agent and generate shapes as pydantic models.

Attributes are snake_case; JSON is Genkit's camelCase (`toolRequest`,
`finishReason`, ...). This module is the one place that converts: parse with
``Model.model_validate(json_dict)``, emit with ``value.to_wire()``. Unknown
fields are kept (``extra="allow"``) so that what Genkit sends round-trips
unchanged, including fields added by newer Genkit versions.

Values here are data. Messages and parts are treated as immutable once built:
code that needs a changed part builds a new one (`Part.with_metadata`), which
lets a turn share the history list with its parent instead of copying it.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StrictBool
from pydantic.alias_generators import to_camel

from ._display import bundle
from ._made import made
from .errors import NbAgentsError

__all__ = [
    "AGENT_FINISH_REASONS",
    "AgentErrorInfo",
    "AgentInit",
    "AgentInput",
    "AgentOutput",
    "AgentStreamChunk",
    "Artifact",
    "CallOptions",
    "ChunkSink",
    "FinishReason",
    "GenerateRequest",
    "GenerateResponse",
    "Media",
    "Message",
    "ModelResponseChunk",
    "Part",
    "Role",
    "SessionSnapshot",
    "SessionState",
    "SnapshotStatus",
    "ToolDefinition",
    "ToolRequest",
    "ToolResponse",
    "ToolResume",
    "TurnEnd",
    "WireModel",
    "error_info",
]

FinishReason = Literal[
    "stop", "length", "blocked", "interrupted", "other", "unknown", "aborted", "detached", "failed"
]
"""The nine agent finish reasons: six mirror the model, three are agent-only."""

AGENT_FINISH_REASONS: tuple[str, ...] = get_args(FinishReason)

SnapshotStatus = Literal["pending", "completed", "failed", "aborting", "aborted", "expired"]
"""Snapshot statuses. ``expired`` is never stored: it is computed on read."""

Role = Literal["user", "model", "tool", "system"]


class WireModel(BaseModel):
    """Base of every wire model: camelCase aliases, unknown fields kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        protected_namespaces=(),
        # validators are built on first use, not at import: `import nb_agents` stays fast
        defer_build=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The value as Genkit JSON (camelCase; fields never set, or None, are omitted)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)

    def to_json(self) -> str:
        """The value as a compact Genkit JSON string."""
        return json.dumps(self.to_wire(), separators=(",", ":"), ensure_ascii=False)


class Media(WireModel):
    url: str
    content_type: str | None = None


class ToolRequest(WireModel):
    name: str
    ref: str | None = None
    input: Any = None


class ToolResponse(WireModel):
    name: str
    ref: str | None = None
    output: Any = None
    content: list[Part] | None = None


class Part(WireModel):
    """One piece of a message: text, media, a tool request or response, data, ..."""

    text: str | None = None
    media: Media | None = None
    tool_request: ToolRequest | None = None
    tool_response: ToolResponse | None = None
    data: Any = None
    reasoning: str | None = None
    custom: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None

    @property
    def is_interrupt(self) -> bool:
        """True for a tool request that paused its turn (``metadata.interrupt``)."""
        return self.tool_request is not None and bool((self.metadata or {}).get("interrupt"))

    def with_metadata(self, **changes: Any) -> Part:
        """A copy with metadata keys set (a value of `None` removes the key)."""
        meta = dict(self.metadata or {})
        for key, value in changes.items():
            if value is None:
                meta.pop(key, None)
            else:
                meta[key] = value
        return made(type(self), {"metadata": meta}, like=self)


class Message(WireModel):
    role: Role
    content: list[Part] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        """The concatenated text parts."""
        return "".join(p.text for p in self.content if p.text is not None)

    @property
    def tool_requests(self) -> list[Part]:
        """The parts that request a tool call."""
        return [p for p in self.content if p.tool_request is not None]

    def interrupts(self) -> list[Part]:
        """The tool-request parts that paused the turn."""
        return [p for p in self.content if p.is_interrupt]

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return bundle(self)


class ModelResponseChunk(WireModel):
    role: Role | None = None
    index: int | None = None
    content: list[Part] = Field(default_factory=list)
    custom: Any = None
    aggregated: bool | None = None

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.content if p.text is not None)

    def interrupts(self) -> list[Part]:
        """The interrupt parts in this chunk (the synthetic ``role: tool`` chunk)."""
        return [p for p in self.content if p.is_interrupt]


class ToolDefinition(WireModel):
    name: str
    description: str = ""
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


class GenerateRequest(WireModel):
    messages: list[Message]
    config: Any = None
    tools: list[ToolDefinition] = Field(default_factory=list)
    tool_choice: str | None = None
    output: dict[str, Any] | None = None


class GenerateResponse(WireModel):
    message: Message | None = None
    finish_reason: str | None = None
    finish_message: str | None = None
    usage: dict[str, Any] | None = None
    custom: Any = None
    candidates: list[dict[str, Any]] | None = None

    def resolved_message(self) -> Message | None:
        """The message, also from the legacy ``candidates`` shape."""
        if self.message is not None:
            return self.message
        if self.candidates:
            return Message.model_validate(self.candidates[0].get("message"))
        return None

    def resolved_finish_reason(self) -> str:
        if self.finish_reason:
            return self.finish_reason
        if self.candidates:
            return str(self.candidates[0].get("finishReason") or "unknown")
        return "unknown"


class Artifact(WireModel):
    name: str | None = None
    parts: list[Part] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None


class SessionState(WireModel):
    session_id: str | None = None
    messages: list[Message] = Field(default_factory=list)
    custom: Any = None
    artifacts: list[Artifact] = Field(default_factory=list)


class ToolResume(WireModel):
    """The answers to a paused turn: ``respond`` and ``restart`` parts."""

    respond: list[Part] = Field(default_factory=list)
    restart: list[Part] = Field(default_factory=list)
    metadata: Any = None


class AgentInput(WireModel):
    message: Message | None = None
    resume: ToolResume | None = None
    detach: bool | None = None
    # nb_agents extensions: run the same answer once more after its attempt failed or was aborted;
    # answer some of the interrupts now, the turn staying paused on the others
    retry: StrictBool | None = None
    partial: StrictBool | None = None


class AgentInit(WireModel):
    snapshot_id: str | None = None
    session_id: str | None = None
    state: SessionState | None = None


class AgentErrorInfo(WireModel):
    status: str | None = None
    message: str = ""
    details: Any = None


def error_info(exc: BaseException) -> AgentErrorInfo:
    """The wire error of an exception; for one outside the tree, the traceback goes in the details."""
    if isinstance(exc, NbAgentsError):
        return AgentErrorInfo(status=exc.status, message=exc.message, details=exc.details)
    kind = type(exc).__name__
    return AgentErrorInfo(
        status="INTERNAL",
        message=str(exc) or kind,
        details={
            "type": kind,
            "public": f"the turn failed: {kind}",  # what a remote client is shown (see nb_agents.server)
            "traceback": "".join(traceback.format_exception(exc)),
        },
    )


class AgentOutput(WireModel):
    session_id: str | None = None
    snapshot_id: str | None = None
    state: SessionState | None = None
    message: Message | None = None
    artifacts: list[Artifact] | None = None
    finish_reason: FinishReason | None = None
    error: AgentErrorInfo | None = None
    # In-process only, never on the wire: the session's history after a server-managed turn,
    # which the output does not carry (a `Chat` of a local agent keeps its `messages` exact).
    _history: list[Message] | None = PrivateAttr(default=None)
    # In-process only too: when the turn ran and its steps (what a stored row keeps as ``timing``)
    _timing: dict[str, Any] | None = PrivateAttr(default=None)
    # In-process only too: this output replays what the same answer, sent before, came to
    # (exactly once: nothing ran for this call); a form then reads who answered (`TurnView`)
    _replayed: bool = PrivateAttr(default=False)
    if TYPE_CHECKING:
        # always set on a built output: the hot paths read it (a dict lookup), not the private
        # attributes (pydantic's ``__getattr__``, which raises and catches an AttributeError)
        __pydantic_private__: dict[str, Any]

    def interrupts(self) -> list[Part]:
        """The interrupt parts of the output message."""
        return self.message.interrupts() if self.message is not None else []

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return bundle(self)


class TurnEnd(WireModel):
    snapshot_id: str | None = None
    finish_reason: FinishReason | None = None


class AgentStreamChunk(WireModel):
    model_chunk: ModelResponseChunk | None = None
    custom_patch: list[dict[str, Any]] | None = None
    artifact: Artifact | None = None
    turn_end: TurnEnd | None = None


class SessionSnapshot(WireModel):
    snapshot_id: str
    session_id: str | None = None
    parent_id: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    heartbeat_at: str | None = None
    status: SnapshotStatus | None = None
    finish_reason: FinishReason | None = None
    error: AgentErrorInfo | None = None
    state: SessionState | None = None
    # nb_agents' bookkeeping, kept by the stores and never sent on the wire (Genkit's Python
    # client refuses unknown snapshot fields): whose session this is
    agent: str | None = None
    owner: str | None = None
    tool_runs: list[dict[str, Any]] | None = None  # what a failed or aborted attempt's tools did
    answer: dict[str, Any] | None = None  # a failed or aborted attempt's answer (ToolResume), to retry
    fork_of: str | None = None  # a fork's first row: the paused snapshot it was copied from
    timing: dict[str, Any] | None = None  # when the turn ran and its steps (`nb_agents.notebook.Timeline`)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return bundle(self)


@dataclass(frozen=True, slots=True)
class CallOptions:
    """What travels with one call besides its input and init (not a Genkit wire type).

    Attributes:
        config: Model settings for this call (``temperature``, ...), laid over
            the agent's own per key. Over HTTP they travel in the request
            body's ``config`` field, which nb_agents servers read and Genkit
            servers ignore.
        context: The request context (``{"auth": {"uid": ...}, ...}``): what a
            server's context provider derived from the request, or what an
            in-process caller passes. Tools, handlers and middleware read it as
            ``ctx.context``. Never taken from a remote client's body.
        stream: Whether the caller reads the turn's stream. False (a chat's
            ``send`` and ``resume``, which return the whole response) says
            that ``on_chunk`` follows only what the handler changes in the
            session (its custom-state patches and artifacts): the engine then
            builds none of the chunks that only a stream would show (tool,
            pause and turn-end chunks; `TurnContext.streaming` is False).
    """

    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    stream: bool = True


ChunkSink = Callable[[AgentStreamChunk], Awaitable[None]]
"""Where a turn's stream chunks go, one call per chunk."""
