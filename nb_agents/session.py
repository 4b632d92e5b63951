"""The live session of one turn: messages, custom state, artifacts.

`Session` is what a turn handler and its tools read and change; every
change to custom state or artifacts is streamed as a ``customPatch`` or
``artifact`` chunk. `TurnContext` is what a custom agent's handler receives.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from .types import (
    AgentInput,
    AgentStreamChunk,
    Artifact,
    CallOptions,
    ChunkSink,
    FinishReason,
    Message,
    ModelResponseChunk,
    Part,
    SessionState,
)

__all__ = ["ChunkSink", "Session", "TurnContext", "TurnHandler", "as_message", "last_model"]

_NO_OPTIONS = CallOptions()


async def _drop(chunk: AgentStreamChunk) -> None:
    return None


async def _no_rules() -> list[dict[str, Any]]:
    return []


class Session:
    """A conversation's working state during a turn.

    Attributes:
        session_id: The conversation id.
        messages: The history (without system preamble). Treat the messages
            as immutable: replace a message instead of editing it.
        custom: The custom state (any JSON value); change it with `update_custom`.
        artifacts: Named outputs; change them with `add_artifacts`.
    """

    def __init__(
        self,
        session_id: str,
        messages: list[Message] | None = None,
        custom: Any = None,
        artifacts: list[Artifact] | None = None,
    ) -> None:
        self.session_id = session_id
        self.messages: list[Message] = list(messages or [])
        self.custom = custom
        self.artifacts: list[Artifact] = list(artifacts or [])
        self._emit: ChunkSink = _drop
        self._patched_this_turn = False

    @classmethod
    def from_state(cls, state: SessionState, session_id: str) -> Session:
        return cls(
            state.session_id or session_id,
            state.messages,
            copy.deepcopy(state.custom),
            state.artifacts,
        )

    def state(self) -> SessionState:
        """The session as a `SessionState` value (shares the message objects)."""
        # validated: a handler may have put a plain dict in `messages` or `artifacts` (public lists)
        return SessionState(
            session_id=self.session_id,
            messages=list(self.messages),
            custom=copy.deepcopy(self.custom),
            artifacts=list(self.artifacts),
        )

    def last_model(self) -> Message | None:
        """The latest model message of the history."""
        return last_model(self.messages)

    async def update_custom(self, fn: Callable[[Any], Any]) -> Any:
        """Change the custom state: ``fn(current)`` returns the new value.

        `fn` gets a copy, so it may also change it in place and return None.
        The change is streamed as a ``customPatch`` chunk: the first patch of
        a turn replaces the whole document, later ones are RFC 6902 diffs.
        """
        before = self.custom
        draft = copy.deepcopy(before)
        after = fn(draft)
        if after is None:
            after = draft
        self.custom = after
        if not self._patched_this_turn:
            ops: list[dict[str, Any]] = [{"op": "replace", "path": "", "value": copy.deepcopy(after)}]
            self._patched_this_turn = True
        else:
            import jsonpatch  # only custom state needs it: keep it off the import path

            ops = list(jsonpatch.make_patch(before if before is not None else {}, after).patch)
        if ops:
            await self._emit(AgentStreamChunk(custom_patch=ops))
        return after

    async def add_artifacts(self, artifacts: Iterable[Artifact | dict[str, Any]]) -> None:
        """Add artifacts; one with the name of an existing artifact replaces it."""
        for item in artifacts:
            art = item if isinstance(item, Artifact) else Artifact.model_validate(item)
            if art.name is not None:
                for i, old in enumerate(self.artifacts):
                    if old.name == art.name:
                        self.artifacts[i] = art
                        break
                else:
                    self.artifacts.append(art)
            else:
                self.artifacts.append(art)
            await self._emit(AgentStreamChunk(artifact=art))


class TurnContext:
    """What a custom agent's turn handler receives besides the input.

    Attributes:
        session: The live `Session`.
        abort_signal: An `asyncio.Event` set when the turn is aborted.
        snapshot_id: The id this turn's snapshot will get (None without a store).
        parent_snapshot_id: The snapshot this turn continues from.
        turn_index: 0 for the first turn of the invocation, then 1, 2, ...
        context: The request context (``{"auth": {...}}``), or {} when none was given.
        idempotency_base: What a tool call's idempotency key is derived from: the
            same for every attempt at one answer (takeovers and retries).
        tools_started: Set when the turn started a tool (a side effect may have happened).
        config: This call's model settings (``chat.send(..., config=)``), or None.
        finish_reason: Set it to end the turn with another reason than ``stop``.
        streaming: Whether anyone reads the turn's stream (a JSON request, a bare
            ``agent.invoke`` without ``on_chunk`` and a chat's ``send`` have nobody;
            see `CallOptions.stream`): a chunk costly to build need not be built
            when it is False. What the session's changes emit is delivered either way.
    """

    def __init__(
        self,
        *,
        session: Session,
        emit: ChunkSink,
        abort_signal: asyncio.Event,
        snapshot_id: str | None,
        parent_snapshot_id: str | None,
        turn_index: int,
        options: CallOptions = _NO_OPTIONS,
        streaming: bool | None = None,
    ) -> None:
        self.session = session
        self._emit = emit
        self.streaming = emit is not _drop if streaming is None else streaming
        # the session's turn begins: its changes stream to `emit`, the first patch replacing the
        # document, until the turn ends (`_end`)
        session._emit = emit
        session._patched_this_turn = False
        self.abort_signal = abort_signal
        self.snapshot_id = snapshot_id
        self.parent_snapshot_id = parent_snapshot_id
        self.turn_index = turn_index
        self.context: dict[str, Any] = options.context or {}
        self.config = options.config
        self.finish_reason: FinishReason = "stop"
        # what the engine needs to know of the turn's side effects (set by the tool rounds)
        self.idempotency_base = snapshot_id or ""
        self.tools_started = False
        self.calls_started = 0  # calls under way or done that may have acted
        self.tool_runs: list[dict[str, Any]] = []
        # what the decision step decided about the calls that needed a person (for the audit),
        # the per-session rules the turn's answers made, and how to read the session's rules now
        self.decisions: list[tuple[str, str | None, Any, Any]] = []  # (name, ref, Decision, input)
        self.new_rules: list[dict[str, Any]] = []
        self.decided: dict[tuple[str, str | None], Any] = {}  # the decisions of an answer's calls
        self.stored_rules: Callable[[], Awaitable[list[dict[str, Any]]]] = _no_rules
        # when the turn started, and what ran in it (`_engine.observe`: the timeline's steps)
        self.clock = time.monotonic()
        self.steps: list[list[Any]] = []

    def _end(self) -> None:
        """The handler returned: neither this context nor the session streams to the caller now (a
        task the handler left running cannot stream into a later turn), and the session no longer
        holds the emitter, which holds the invocation that holds the session: freed when its call
        returns, not by a collection of reference cycles."""
        self._emit = self.session._emit = _drop
        self.streaming = False

    async def send_chunk(self, chunk: AgentStreamChunk | ModelResponseChunk | dict[str, Any]) -> None:
        """Stream a chunk to the caller (a model chunk, or a whole stream chunk)."""
        if isinstance(chunk, dict):
            chunk = (
                AgentStreamChunk.model_validate(chunk)
                if set(chunk) & {"modelChunk", "model_chunk", "artifact", "customPatch", "turnEnd"}
                else ModelResponseChunk.model_validate(chunk)
            )
        if isinstance(chunk, ModelResponseChunk):
            chunk = AgentStreamChunk(model_chunk=chunk)
        await self._emit(chunk)


def as_message(value: Message | str | None) -> Message | None:
    """A turn handler's return value as a model message."""
    if value is None or isinstance(value, Message):
        return value
    if isinstance(value, str):
        return Message(role="model", content=[Part(text=value)])
    raise TypeError(f"a turn handler must return a Message, a str or None, got {type(value).__name__}")


def last_model(messages: list[Message]) -> Message | None:
    """The latest model message of `messages`, or None."""
    for msg in reversed(messages):
        if msg.role == "model":
            return msg
    return None


class TurnHandler(Protocol):
    """What runs one turn: ``async (AgentInput, TurnContext) -> Message | str | None``."""

    def __call__(self, inp: AgentInput, ctx: TurnContext) -> Awaitable[Message | str | None]: ...
