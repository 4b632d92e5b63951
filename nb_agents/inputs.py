"""What a verb's arguments become: an `AgentInput`, an `AgentInit`, `CallOptions`.

Every agent verb (`Chat.send`, `BaseAgent.run`, ...) takes its input as a str, a
`Message`, a dict or an `AgentInput`, positions the turn by snapshot, session
or state, and passes ``config=`` / ``context=``; these turn them into the wire
values, checked, in one place.
"""

from __future__ import annotations

from typing import Any

from .errors import InvalidArgumentError
from .types import AgentInit, AgentInput, CallOptions, Message, SessionState

__all__ = ["InputLike", "as_input", "call_options", "make_init"]

InputLike = str | Message | AgentInput | dict[str, Any]


def as_input(value: InputLike | None) -> AgentInput:
    """A str, a `Message`, a dict or an `AgentInput` as an `AgentInput`."""
    if isinstance(value, AgentInput):
        return value
    if isinstance(value, Message):
        return AgentInput(message=value)
    if isinstance(value, str) or value is None:
        # one validation of the whole input, not one construction per model in it
        return AgentInput.model_validate({"message": {"role": "user", "content": [{"text": value or ""}]}})
    if isinstance(value, dict):
        return AgentInput.model_validate(value)
    raise TypeError(f"send() takes a str, a Message or an AgentInput, got {type(value).__name__}")


def make_init(
    snapshot_id: str | None, session_id: str | None, state: SessionState | dict[str, Any] | None
) -> AgentInit:
    """The `AgentInit` for a call positioned by snapshot, session or state (one way only)."""
    if state is not None and (snapshot_id or session_id):
        raise InvalidArgumentError("state is mutually exclusive with snapshot_id and session_id")
    st = SessionState.model_validate(state) if isinstance(state, dict) else state
    return AgentInit(snapshot_id=snapshot_id, session_id=session_id, state=st)


def call_options(config: dict[str, Any] | None, context: dict[str, Any] | None) -> CallOptions:
    """The `CallOptions` of a verb's ``config=`` and ``context=`` keywords, checked."""
    if config is not None and not isinstance(config, dict):
        raise InvalidArgumentError(f"config must be a dict of model settings, got {type(config).__name__}")
    if context is not None and not isinstance(context, dict):
        raise InvalidArgumentError(f"context must be a dict, got {type(context).__name__}")
    return CallOptions(config=config, context=context)
