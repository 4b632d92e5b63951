"""Interrupts as data: the pause signal, the answer builders and typed claims.

A tool pauses its turn by raising `Interrupt`. The paused turn *returns*: its
model message carries the tool request with ``metadata.interrupt`` set to the
pause data. Answers are parts built here:

* ``respond``: a ``toolResponse`` part that supplies the tool's output (the
  tool does not run);
* ``restart``: a ``toolRequest`` part that runs the tool again, with
  ``metadata.resumed`` (what the tool sees as its reply) and, when the input
  was replaced, ``metadata.replacedInput`` holding the original input;
* ``cancel``: the person abandoned the request. A ``toolResponse`` part whose
  output is ``{"cancelled": "<why>"}`` and whose metadata says
  ``"cancelled": true`` (`cancel_part`): the tool does not run, the model reads
  that the call was cancelled (not denied), and the audit records kind
  ``"cancel"``. AG-UI calls this outcome "cancelled", MCP's elicitation "cancel".

The views of a paused call live here too, beside the builders they call:
`AgentInterrupt` (the chat API's untyped view, Genkit's ``AgentInterrupt``),
`ApprovalHold` (a call held by `ToolApproval`) and `InterruptCall`, the typed
claim Go calls ``tool.Interrupted(part)``.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from ._json import canonical, to_json_value
from .expiry import Expiry, check_expires_in, deadline_of, describe, is_due
from .types import Part, ToolRequest, ToolResponse

if TYPE_CHECKING:
    from .tools import Tool

__all__ = [
    "APPROVAL_PREFIX",
    "CONTROL_KEYS",
    "AgentInterrupt",
    "ApprovalHold",
    "Interrupt",
    "InterruptCall",
    "approval",
    "cancel_part",
    "held_for_approval",
    "is_cancel",
    "interrupt_as",
    "interrupt_digest",
    "respond_part",
    "restart_part",
    "to_json_value",
    "untrusted_call",
]

T = TypeVar("T", bound=BaseModel)

APPROVAL_PREFIX = "Tool not in approved list:"
"""How `ToolApproval`'s pause message starts (Genkit's text, on every runtime)."""

CONTROL_KEYS = frozenset(
    {
        # a pause and its bookkeeping (Genkit's and nb_agents')
        "interrupt",
        "resolvedInterrupt",
        "pendingOutput",
        "pendingRule",
        "expiresAt",
        "onExpiry",
        "started",
        # an answer: what decides whether a held call runs, and what binds it to its pause
        "resumed",
        "replacedInput",
        "expired",
        "interruptDigest",
        "interruptResponse",
        # what answered a call
        "approvedBy",
        "deniedBy",
        "answeredBy",
        "source",
    }
)
"""The metadata keys of a tool-request part that only nb_agents (or a person's answer) writes.

A model's tool call never carries them: `untrusted_call` strips them from each
call as it arrives from the model, before it runs or is stored as a pause, so
nothing a model writes (a prompt-injected ``resumed: {"toolApproved": true}``,
a ``replacedInput``, an ``expired`` mark) can approve, edit or answer a call.
"""


def untrusted_call(part: Part) -> Part:
    """A tool-request part from a model, without the control metadata only nb_agents writes."""
    meta = part.metadata
    if not meta or meta.keys().isdisjoint(CONTROL_KEYS):
        return part
    kept = {k: v for k, v in meta.items() if k not in CONTROL_KEYS}
    return part.model_copy(update={"metadata": kept or None})


def interrupt_digest(request: Part) -> str:
    """What identifies one pause of one call: its name, ref, input and pause data, hashed.

    The answer builders put it in the answer's ``metadata.interruptDigest``, and
    resume validation refuses an answer whose digest is not the paused
    request's: an answer built for one pause cannot resume another that happens
    to share its (name, ref).
    """
    tr = request.tool_request
    assert tr is not None
    body = {
        "name": tr.name,
        "ref": tr.ref,
        "input": tr.input,
        "interrupt": (request.metadata or {}).get("interrupt"),
    }
    return hashlib.sha256(canonical(body).encode()).hexdigest()[:24]


def held_for_approval(part: Part) -> bool:
    """Whether `part` is a call paused by `ToolApproval` (its pause message says so)."""
    data = (part.metadata or {}).get("interrupt")
    return isinstance(data, dict) and str(data.get("message", "")).startswith(APPROVAL_PREFIX)


class Interrupt(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by a tool to pause the turn and hand control to the caller.

    Args:
        data: The pause payload shown to the human: a JSON object (a dict or a
            pydantic model) or None. It lands in ``metadata.interrupt`` of the
            tool request (``true`` when None).
        expires_in: How long this pause waits for an answer (a `timedelta` or
            seconds); None takes the tool's own ``expires_in``, if any.
        on_expiry: What answers it past the deadline (`Expiry`, or a denial
            message); None takes the tool's, else a denial.

    Example:
        >>> raise Interrupt({"details": "Transfer $500 to savings"})  # doctest: +SKIP
        >>> raise Interrupt({"details": "..."}, expires_in=timedelta(minutes=5),
        ...                 on_expiry="Nobody approved the transfer in time.")  # doctest: +SKIP
    """

    def __init__(
        self,
        data: BaseModel | dict[str, Any] | None = None,
        *,
        expires_in: timedelta | float | None = None,
        on_expiry: Expiry | str | None = None,
    ) -> None:
        value = to_json_value(data)
        if value is not None and not isinstance(value, dict):
            raise TypeError(
                "Interrupt data must be a JSON object (a dict or a pydantic model) or None, "
                f"got {type(data).__name__}: {data!r}"
            )
        super().__init__("interrupt")
        self.data: dict[str, Any] | None = value
        self.expires_in = check_expires_in(expires_in)
        self.on_expiry = Expiry.of(on_expiry) if on_expiry is not None else None


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
