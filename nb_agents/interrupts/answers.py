"""The answers to a paused call, as parts: respond, restart, approve, cancel (see `nb_agents.interrupts`)."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .._json import to_json_value
from ..types import Part, ToolRequest, ToolResponse
from .signal import CONTROL_KEYS, interrupt_digest

__all__ = [
    "CANCELLED",
    "approval",
    "cancel_part",
    "interrupt_as",
    "is_cancel",
    "respond_part",
    "restart_part",
]

T = TypeVar("T", bound=BaseModel)


def respond_part(request: Part, output: Any, *, metadata: Any = None, mark: bool = True) -> Part:
    """A ``toolResponse`` part answering an interrupted request with `output`.

    With ``mark`` (the default, as Go's ``Respond``) the part carries
    ``metadata.interruptResponse``; the chat builders leave it off as JS does.
    The answer is bound to the pause it answers (``metadata.interruptDigest``).
    """
    tr = _tool_request(request)
    part = Part(tool_response=ToolResponse(name=tr.name, ref=tr.ref, output=to_json_value(output)))
    meta: dict[str, Any] = {}
    if mark:
        meta["interruptResponse"] = to_json_value(metadata) if metadata is not None else True
    if request.is_interrupt:
        meta["interruptDigest"] = interrupt_digest(request)
    part.metadata = meta or None
    return part


def restart_part(
    request: Part, *, resumed: Any = None, replace_input: Any = None, mark_resumed: bool = True
) -> Part:
    """A ``toolRequest`` part that re-runs an interrupted request.

    Args:
        request: The interrupted tool-request part.
        resumed: What the tool sees as ``ctx.resumed`` (its reply). When None
            and ``mark_resumed`` is set, ``true`` is sent.
        replace_input: A new input; the original goes in ``replacedInput``.
        mark_resumed: Whether to set ``metadata.resumed`` when ``resumed`` is None.
    """
    tr = _tool_request(request)
    # what the call carried besides control keys (a provider's own metadata) goes along;
    # the control keys of the answer are this builder's alone
    meta = {k: v for k, v in (request.metadata or {}).items() if k not in CONTROL_KEYS}
    if resumed is not None:
        meta["resumed"] = to_json_value(resumed)
    elif mark_resumed:
        meta["resumed"] = True
    new_input = tr.input
    if replace_input is not None:
        meta["replacedInput"] = tr.input
        new_input = to_json_value(replace_input)
    if request.is_interrupt:
        meta["interruptDigest"] = interrupt_digest(request)
    return Part(
        tool_request=ToolRequest(name=tr.name, ref=tr.ref, input=new_input),
        metadata=meta or None,
    )


def approval(always: bool = False, scope: str | None = None) -> dict[str, Any]:
    """The ``resumed`` value of an approval: ``toolApproved`` (Genkit's), and ``always`` when asked.

    `scope` narrows the per-session rule of ``always``: ``"tool"`` (every call of
    the tool, the default) or ``"arguments"`` (only calls with exactly these arguments).

    Example:
        >>> approval(True, "arguments")
        {'toolApproved': True, 'always': True, 'scope': 'arguments'}
    """
    if not isinstance(always, bool):
        raise TypeError(f"approve(always=...) takes True or False, got {always!r}")
    if scope is not None and scope not in ("tool", "arguments"):
        raise ValueError(f"approve(scope=...) takes 'tool' or 'arguments', got {scope!r}")
    if scope is not None and not always:
        raise ValueError("approve(scope=...) narrows an 'always' rule: pass always=True with it")
    if not always:
        return {"toolApproved": True}
    if scope == "arguments":
        return {"toolApproved": True, "always": True, "scope": "arguments"}
    return {"toolApproved": True, "always": True}


CANCELLED = "cancelled"
"""The key of a cancelled call's output (and the mark in its answer's metadata)."""


def cancel_part(request: Part, reason: str | None = None) -> Part:
    """A ``toolResponse`` part that cancels an interrupted call (see the module docstring).

    Example:
        >>> part = cancel_part(Part(tool_request=ToolRequest(name="transfer", ref="t1", input={})))
        >>> part.tool_response.output
        {'cancelled': "The user cancelled the call to 'transfer'."}
    """
    tr = _tool_request(request)
    if reason is not None and not isinstance(reason, str):
        raise TypeError(f"cancel(reason=...) takes a str or None, got {type(reason).__name__}")
    text = f"The user cancelled the call to '{tr.name}'" + (f": {reason}" if reason else ".")
    part = respond_part(request, {CANCELLED: text}, mark=False)
    part.metadata = {**(part.metadata or {}), CANCELLED: True}
    return part


def is_cancel(part: Part) -> bool:
    """Whether `part` is a cancel answer: marked ``cancelled``, its output ``{"cancelled": "<text>"}``."""
    tr = part.tool_response
    if tr is None or (part.metadata or {}).get(CANCELLED) is not True:
        return False
    out = tr.output
    return isinstance(out, dict) and set(out) == {CANCELLED} and isinstance(out[CANCELLED], str)


def _tool_request(part: Part) -> ToolRequest:
    if part.tool_request is None:
        raise ValueError(f"expected a toolRequest part, got {part.to_json()}")
    return part.tool_request


def interrupt_as(part: Part, model: type[T]) -> T | None:
    """Read an interrupt's pause data as `model` (Go ``ai.InterruptAs``).

    Returns None when the part is not an interrupt or its data does not fit.
    """
    if not part.is_interrupt:
        return None
    data = (part.metadata or {}).get("interrupt")
    try:
        return model.model_validate(data if isinstance(data, dict) else {})
    except ValidationError:
        return None
