"""Middleware: hooks around each model call and each tool call of a turn.

A middleware overrides `Middleware.wrap_model` and/or `Middleware.wrap_tool`
and calls ``call_next`` to go on (or not). `ToolApproval` is the built-in
one: it holds every tool call outside an allowlist as an interrupt until the
caller approves it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any

from .expiry import Expiry, check_expires_in
from .interrupts import APPROVAL_PREFIX, ApprovalHold, Interrupt
from .tools import ToolContext
from .types import GenerateRequest, GenerateResponse, Part

__all__ = ["ApprovalHold", "Middleware", "ModelNext", "ToolApproval", "ToolNext"]

ModelNext = Callable[[GenerateRequest], Awaitable[GenerateResponse]]
ToolNext = Callable[[Any, ToolContext], Awaitable[Any]]


class Middleware:
    """Base class: both hooks pass straight through."""

    async def wrap_model(self, request: GenerateRequest, call_next: ModelNext) -> GenerateResponse:
        return await call_next(request)

    async def wrap_tool(self, input: Any, ctx: ToolContext, call_next: ToolNext) -> Any:
        return await call_next(input, ctx)


def _approved(resumed: Any) -> bool:
    if not isinstance(resumed, dict):
        return False  # a bare `resumed: true` is not approval
    return resumed.get("toolApproved") is True or resumed.get("tool_approved") is True


class ToolApproval(Middleware):
    """Hold every tool call not in `allowed_tools` until it is approved.

    A held call pauses the turn with ``{"message": "Tool not in approved list:
    <name>"}`` (plus the tool's ``approval_info``, e.g. an MCP tool's server and
    annotations). Approve by restarting it with ``resumed.toolApproved = true``
    (`ApprovalHold.approve`, `AgentInterrupt.approve`); deny by responding.
    A tool whose ``needs_approval`` is False is never held.

    Args:
        allowed_tools: Tool names that run without asking. Empty gates all.
        expires_in: How long a hold waits for an approval (a `timedelta` or
            seconds); None waits forever.
        on_expiry: What answers a hold nobody answered in time: ``Expiry.deny(message)``
            (the default, with a message naming the deadline), ``Expiry.approve()``
            (the call runs) or ``Expiry.respond(output)`` (the model sees `output`).

    Example:
        >>> gate = ToolApproval(allowed_tools=["getBalance"])
        >>> from datetime import timedelta
        >>> gate = ToolApproval(expires_in=timedelta(hours=1),
        ...                     on_expiry=Expiry.deny("Nobody approved this within the hour."))
    """

    def __init__(
        self,
        allowed_tools: Sequence[str] = (),
        *,
        expires_in: timedelta | float | None = None,
        on_expiry: Expiry | str | None = None,
    ) -> None:
        self.allowed_tools = frozenset(allowed_tools)
        self.expires_in = check_expires_in(expires_in)
        self.on_expiry = Expiry.of(on_expiry) if on_expiry is not None else None

    async def wrap_tool(self, input: Any, ctx: ToolContext, call_next: ToolNext) -> Any:
        tool = ctx.tool
        exempt = tool is not None and tool.approval_needed(ctx) is False  # e.g. an MCP readOnlyHint
        if exempt or ctx.name in self.allowed_tools or _approved(ctx.resumed):
            return await call_next(input, ctx)
        extra = tool.approval_info if tool is not None else None
        raise Interrupt(
            {"message": f"{APPROVAL_PREFIX} {ctx.name}", **(extra or {})},
            expires_in=self.expires_in,
            on_expiry=self.on_expiry,
        )

    @staticmethod
    def interrupted(part: Part) -> ApprovalHold | None:
        """Claim `part` if it is a call held by `ToolApproval`, else None."""
        return ApprovalHold.claim(part)
