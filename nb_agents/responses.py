"""What a chat turn gives back: `AgentResponse`, `AgentChunk`, `AgentInterrupt`.

These wrap the wire values (`AgentOutput`, `AgentStreamChunk`) with the
conveniences of Genkit's client API (JS ``AgentResponse``/``AgentChunk``, the
same meaning): ``text``, ``reasoning`` (every reasoning part, joined), ``media``
and ``data`` (the first such part), ``interrupts`` (`AgentInterrupt` views,
defined with the answer builders in `nb_agents.interrupts`, re-exported here),
``finish_message``, ``messages`` (the chat's history after the turn) and
``assert_valid()``.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

from ._display import bundle, show
from .errors import FailedPreconditionError
from .interrupts import AgentInterrupt
from .nested import interrupts_of
from .types import AgentOutput, AgentStreamChunk, Artifact, Media, Message, Part

if TYPE_CHECKING:
    from .protocol import AgentProtocol

__all__ = ["AgentChunk", "AgentInterrupt", "AgentResponse"]


class _Parts:
    """``reasoning``, ``media`` and ``data``, read from the parts of the reply (or the chunk)."""

    @property
    def _parts(self) -> Sequence[Part]:
        raise NotImplementedError

    @property
    def reasoning(self) -> str:
        """The reasoning parts, joined ("" without any)."""
        return "".join(p.reasoning for p in self._parts if p.reasoning is not None)

    @property
    def media(self) -> Media | None:
        """The first media part (``url``, ``content_type``), or None."""
        return next((p.media for p in self._parts if p.media is not None), None)

    @property
    def data(self) -> Any:
        """The first data part (structured output), or None."""
        return next((p.data for p in self._parts if p.data is not None), None)


class AgentResponse(_Parts):
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
        messages: The whole conversation after the turn, as the chat holds it
            (``chat.messages``); for a bare output, its state's messages (or the
            session's history in-process), else empty.
        chat: The `Chat` that produced the response (None for a bare output).

    Example:
        >>> res = AgentResponse(AgentOutput.model_validate(
        ...     {"message": {"role": "model", "content": [{"reasoning": "2+2"}, {"text": "4"}]},
        ...      "finishReason": "stop"}))
        >>> res.text, res.reasoning, res.data, res.media
        ('4', '2+2', None, None)
        >>> res.assert_valid()
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
        # a private attribute at a dict's cost (`AgentOutput.__pydantic_private__`)
        known = raw.state.messages if raw.state is not None else raw.__pydantic_private__["_history"]
        self.messages: list[Message] = list(known) if known is not None else []

    @property
    def agent(self) -> AgentProtocol | None:
        """The agent the response came from (its chat's), or None for a bare output."""
        return self.chat.agent if self.chat is not None else None

    @property
    def text(self) -> str:
        return self.message.text if self.message is not None else ""

    @property
    def _parts(self) -> Sequence[Part]:
        return self.message.content if self.message is not None else ()

    @property
    def finish_message(self) -> str | None:
        return self.error.message if self.error is not None else None

    def assert_valid(self) -> None:
        """Raise unless the turn gave a usable reply: not ``blocked``, and with a message.

        Raises:
            FailedPreconditionError: ``"Generation blocked: ..."`` or ``"Agent
                response has no message."`` (Genkit's wording).
        """
        if self.finish_reason == "blocked":
            why = f": {self.finish_message}" if self.finish_message else ""
            raise FailedPreconditionError(f"Generation blocked{why}.")
        if self.message is None:
            raise FailedPreconditionError("Agent response has no message.")

    @property
    def tool_requests(self) -> list[Part]:
        return self.message.tool_requests if self.message is not None else []

    @property
    def interrupts(self) -> list[AgentInterrupt]:
        """The paused tool calls; empty unless ``finish_reason == "interrupted"``.

        A sub-agent's pause is listed as the calls that wait in it, each with its ``path``.
        """
        return interrupts_of(self.raw.interrupts())

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


class AgentChunk(_Parts):
    """One streamed chunk of a chat turn.

    Attributes:
        raw: The `AgentStreamChunk` on the wire.
        text: The model text in this chunk ("" for other kinds).
        accumulated_text: All model text of the turn so far.
        custom: The custom state after a ``customPatch`` chunk, else None.

    ``reasoning``, ``media`` and ``data`` read the model chunk's parts as
    `AgentResponse`'s read the reply's.
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
        return interrupts_of(mc.interrupts()) if mc is not None else []

    @property
    def _parts(self) -> Sequence[Part]:
        return self.model_chunk.content if self.model_chunk is not None else ()

    def __repr__(self) -> str:
        kind = next(
            k for k in ("model_chunk", "custom_patch", "artifact", "turn_end") if getattr(self, k) is not None
        )
        return f"AgentChunk({kind}, text={self.text!r})"


class LatestResponse:
    """``Chat.last``: the response of a chat's latest turn, held weakly.

    The response holds its chat (what a form resumes through); a chat that held
    its response too would make the pair a reference cycle, which only Python's
    cycle collector frees (and a chat per conversation turns that into collector
    work on every turn). So the chat keeps what the response is made of and a
    weak reference to it: while anything holds the response, ``chat.last`` is
    that object; once nothing does, it is made again, the same, from those parts.
    """

    @overload
    def __get__(self, chat: None, owner: type) -> LatestResponse: ...
    @overload
    def __get__(self, chat: object, owner: type | None = None) -> AgentResponse | None: ...
    def __get__(self, chat: Any, owner: type | None = None) -> AgentResponse | LatestResponse | None:
        if chat is None:
            return self  # looked up on the class (help(), documentation tools)
        held = chat.__dict__.get("_latest")
        if held is None:
            return None
        res: AgentResponse | None = held[0]()
        if res is None:  # nothing else held it: the same response again, from its parts
            raw, custom, maker, messages = held[1]
            res = AgentResponse(raw, custom=custom, chat=chat if maker is None else maker)
            res.messages = list(messages)
            chat.__dict__["_latest"] = (weakref.ref(res), held[1])
        return res

    def __set__(self, chat: Any, res: AgentResponse | None) -> None:
        if res is None:
            chat.__dict__["_latest"] = None
            return
        maker = None if res.chat is chat else res.chat  # its own chat is not held twice (a cycle)
        chat.__dict__["_latest"] = (weakref.ref(res), (res.raw, res.custom, maker, res.messages))
