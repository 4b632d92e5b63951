"""Middleware: hooks around each model call and each tool call of a turn.

A middleware overrides `Middleware.wrap_model` and/or `Middleware.wrap_tool`
and calls ``call_next`` to go on (or not). `ToolApproval` is the built-in
approval policy: every tool call outside its allowlist is held as an
interrupt until a person approves it, unless a rule answers it first
(`ApprovalRule`, and the per-session rules an ``approve(always=True)``
makes). It is policy, not a hook: the engine's one decision step
(`nb_agents._engine.decision`) reads it, with the tool's own needs, for every
call, so no other middleware can approve a held call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any

from .expiry import Expiry, check_expires_in
from .interrupts import ApprovalHold
from .rules import ApprovalRule, Gate, numbered
from .tools import ToolContext
from .types import GenerateRequest, GenerateResponse, Part

__all__ = ["ApprovalHold", "ApprovalRule", "Middleware", "ModelNext", "ToolApproval", "ToolNext"]

ModelNext = Callable[[GenerateRequest], Awaitable[GenerateResponse]]
ToolNext = Callable[[Any, ToolContext], Awaitable[Any]]


class Middleware:
    """Base class: both hooks pass straight through."""

    async def wrap_model(self, request: GenerateRequest, call_next: ModelNext) -> GenerateResponse:
        return await call_next(request)

    async def wrap_tool(self, input: Any, ctx: ToolContext, call_next: ToolNext) -> Any:
        return await call_next(input, ctx)


class ToolApproval(Middleware):
    """Hold every tool call not in `allowed_tools` until it is approved.

    A held call pauses the turn with ``{"message": "Tool not in approved list:
    <name>"}`` (plus the tool's ``approval_info``, e.g. an MCP tool's server and
    annotations). Approve by restarting it with ``resumed.toolApproved = true``
    (`ApprovalHold.approve`, `AgentInterrupt.approve`); deny by responding.
    A tool whose ``needs_approval`` is False is never held; one whose
    ``needs_approval`` is True is held even without a `ToolApproval`.

    Before a call is held, the first matching rule answers it: `rules` in
    their order (an ``allow`` runs the call, a ``deny`` answers the model with
    a denial and runs nothing), then `allowed_tools`, then the session's rules
    (made by ``approve(always=True)``, read as they are now). A ``deny`` rule
    also refuses an approved call when it matches the input that would run
    (an "Approve with changes" edit included). A call a rule answered says so
    in the history (``metadata.approvedBy`` or ``deniedBy`` of its tool
    response: ``{"rule": id}``) and in the audit.

    Args:
        allowed_tools: Tool names that run without asking. Empty gates all.
        rules: `ApprovalRule` values, checked in order before anything else.
        expires_in: How long a hold waits for an approval (a `timedelta` or
            seconds); None waits forever.
        on_expiry: What answers a hold nobody answered in time: ``Expiry.deny(message)``
            (the default, with a message naming the deadline), ``Expiry.approve()``
            (the call runs) or ``Expiry.respond(output)`` (the model sees `output`).

    Example:
        >>> from datetime import timedelta
        >>> from nb_agents import ApprovalRule
        >>> gate = ToolApproval(allowed_tools=["getBalance"], rules=[
        ...     ApprovalRule("transferMoney", when=lambda inp: inp["amount"] <= 100),
        ...     ApprovalRule("closeAccount", action="deny", message="Accounts are closed in branch.")])
        >>> gate = ToolApproval(expires_in=timedelta(hours=1),
        ...                     on_expiry=Expiry.deny("Nobody approved this within the hour."))
    """

    def __init__(
        self,
        allowed_tools: Sequence[str] = (),
        *,
        rules: Sequence[ApprovalRule] = (),
        expires_in: timedelta | float | None = None,
        on_expiry: Expiry | str | None = None,
    ) -> None:
        if isinstance(allowed_tools, str):
            raise TypeError(f"allowed_tools must be a list of tool names, got the str {allowed_tools!r}")
        self.allowed_tools = frozenset(allowed_tools)
        self.rules = numbered(rules)
        self.expires_in = check_expires_in(expires_in)
        self.on_expiry = Expiry.of(on_expiry) if on_expiry is not None else None

    @property
    def gate(self) -> Gate:
        """The policy as the engine's decision step reads it (`nb_agents._engine.decision`)."""
        return Gate(frozenset(self.allowed_tools), self.rules, self.expires_in, self.on_expiry)

    @staticmethod
    def interrupted(part: Part) -> ApprovalHold | None:
        """Claim `part` if it is a call held by `ToolApproval`, else None."""
        return ApprovalHold.claim(part)
