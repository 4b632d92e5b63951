"""The views of a paused call: `AgentInterrupt`, `ApprovalHold`, and the typed claim `InterruptCall`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..expiry import deadline_of, describe, is_due
from ..types import Part
from .answers import approval, cancel_part, respond_part, restart_part
from .signal import held_for_approval

if TYPE_CHECKING:
    from ..tools import Tool

__all__ = ["AgentInterrupt", "ApprovalHold", "InterruptCall"]

InT = TypeVar("InT")


class InterruptCall(Generic[InT]):
    """A typed claim on an interrupted call of one tool (Go ``tool.Interrupted``).

    Attributes:
        part: The interrupted tool-request part.
        input: The request's input, decoded to the tool's input type.
        data: The pause data (``metadata.interrupt``), a dict or None.
    """

    def __init__(self, tool: Tool, part: Part, input: InT) -> None:
        self.tool = tool
        self.part = part
        self.input = input
        self.data = _pause_data(part)

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def ref(self) -> str | None:
        return self.part.tool_request.ref if self.part.tool_request else None

    def restart(self, reply: Any = None) -> Part:
        """Re-run the tool with `reply` as its resume value (goes in ``restart``)."""
        return restart_part(self.part, resumed=reply)

    def restart_with_input(self, new_input: Any, reply: Any = None) -> Part:
        """Re-run the tool on revised input (goes in ``restart``)."""
        return restart_part(self.part, resumed=reply, replace_input=new_input)

    def respond(self, output: Any) -> Part:
        """Supply the tool's output without running it (goes in ``respond``)."""
        return respond_part(self.part, output)

    def approve(self, *, always: bool = False, scope: str | None = None) -> Part:
        """Approve a call held by `ToolApproval` (restart with ``toolApproved``).

        With `always`, this tool's later calls in this session run without asking too
        (``scope="arguments"``: only those with exactly these arguments).
        """
        return restart_part(self.part, resumed=approval(always, scope))

    def cancel(self, reason: str | None = None) -> Part:
        """Cancel the call: the tool does not run, the model is told (goes in ``respond``)."""
        return cancel_part(self.part, reason)

    def __repr__(self) -> str:
        return f"InterruptCall(name={self.name!r}, ref={self.ref!r}, input={self.input!r})"


def _pause_data(part: Part) -> dict[str, Any] | None:
    data = (part.metadata or {}).get("interrupt")
    return data if isinstance(data, dict) else None


class AgentInterrupt:
    """One paused tool call of a response, with builders for the answer.

    Attributes:
        name: The tool's name.
        ref: The call's ref, if the model gave one.
        input: What the model passed the tool (shown to the human).
        data: The pause payload (``metadata.interrupt``), a dict or None.
        part: The interrupted tool-request part itself.
        expires_at: The pause's deadline (``metadata.expiresAt``, UTC), or None.
        path: The agents on the way to a call that waits in a sub-agent (``["researcher"]``),
            outermost first; empty for a call of the agent itself (`nb_agents.nested`).
    """

    def __init__(self, part: Part) -> None:
        assert part.tool_request is not None
        self.part = part
        self.name = part.tool_request.name
        self.ref = part.tool_request.ref
        self.input = part.tool_request.input
        self.data = _pause_data(part)
        self.expires_at = deadline_of(part)
        self.path: list[str] = []  # the sub-agents a nested pause waits in (`nb_agents.nested`)

    @property
    def expired(self) -> bool:
        """Whether the deadline has passed: an answer is refused, the declared default applies."""
        return is_due(self.part)

    @property
    def on_expiry(self) -> str | None:
        """What applies past the deadline, in words (``denied (...)``, ``approved``), or None."""
        return describe(self.part) if self.expires_at is not None else None

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

    def approve(self, *, always: bool = False, scope: str | None = None) -> Part:
        """Approve a call held by `ToolApproval`. Goes in ``restart``.

        Args:
            always: Also approve this tool's later calls in this session: the
                answer carries ``resumed.always = true``, and the turn it
                resumes stores a per-session rule (`Agent.rules` lists it,
                `Agent.revoke_rule` revokes it). Needs an agent with a store.
            scope: What the ``always`` rule allows: ``"tool"`` (every call of
                this tool; the default) or ``"arguments"`` (only calls with
                exactly this call's arguments).

        Example:
            >>> await chat.resume(restart=[i.approve(always=True, scope="arguments")])  # doctest: +SKIP
        """
        return restart_part(self.part, resumed=approval(always, scope))

    def cancel(self, reason: str | None = None) -> Part:
        """Cancel the call: the person abandoned the request. Goes in ``respond``.

        The tool does not run; the model reads ``{"cancelled": "The user cancelled
        the call to '<tool>'[: reason]"}``, which is not a denial; the audit
        records kind ``"cancel"`` (a person's decision). Any interrupt can be
        cancelled, whatever its output schema.

        Example:
            >>> await chat.resume(respond=[i.cancel("No longer needed")])  # doctest: +SKIP
        """
        return cancel_part(self.part, reason)

    def __repr__(self) -> str:
        kind = type(self).__name__
        return f"{kind}(name={self.name!r}, ref={self.ref!r}, input={self.input!r}, data={self.data!r})"


class ApprovalHold(AgentInterrupt):
    """A claim on a tool call held by `ToolApproval`: approve it or deny it."""

    def deny(self, output: Any = None) -> Part:
        """Refuse the call: a respond whose output the model sees instead."""
        if output is None:
            output = {"error": f"The user denied the call to '{self.name}'."}
        return respond_part(self.part, output)

    respond = deny

    @classmethod
    def claim(cls, part: Part) -> ApprovalHold | None:
        """`part` as a hold if `ToolApproval` paused it, else None."""
        return cls(part) if part.is_interrupt and held_for_approval(part) else None
