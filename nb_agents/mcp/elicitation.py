"""Elicitation as interrupts: a server's question in the middle of a tool call.

When an MCP server sends ``elicitation/create`` while one of its tools runs,
the turn pauses on that tool call. The interrupt's pause data is::

    {"message": "<what the server asks>",
     "mcp": {"server": "everything", "tool": "trigger-elicitation-request",
             "elicitation": {"mode": "form", "requestedSchema": {...}}}}

(``"mode": "url"`` requests carry ``url`` and ``elicitationId`` instead of a
schema.) The answer is a **restart** of the same tool call whose ``resumed``
value is the MCP result::

    {"action": "accept", "content": {...}}   # content fits requestedSchema
    {"action": "decline"}  or  {"action": "cancel"}

`ElicitationRequest` reads the pause data and builds those parts. How the
answer reaches the server depends on the protocol revision the server speaks:

* **2026-07-28**: the server returned its question as the call's result, with
  state to send back; the pause data keeps it (``mcp.inputRequired``, see
  `nb_agents.mcp.rounds`), so the answer can come from any process, after a
  kernel restart or from ``agent.pending()``, and the call is retried with it.
* **2025-era** servers ask in the middle of the call, which stays open (held
  by its `MCPServer`) while the turn waits; the answer goes to that call, and
  it goes on to its result, or to its next question. If this process is gone
  by then, the call cannot be resumed: the answer fails with
  `MCPCallLostError`, and nothing is sent. ``accept(..., rerun=True)`` (or
  ``decline``/``cancel``) then runs the call again from its start and gives
  the answer when the server asks the same question again: whatever the tool
  did before it asked, it does again, so that is the person's choice.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ..interrupts import AgentInterrupt, restart_part
from ..types import Part

__all__ = [
    "ElicitAnswer",
    "ElicitationRequest",
    "content_errors",
    "elicitation_answer",
    "elicitation_pause",
]


class ElicitAnswer(BaseModel):
    """The ``resumed`` value that answers an elicitation (MCP's ``ElicitResult``)."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    rerun: bool = False  # a 2025-era call lost with its process: run it again, answer when asked

    def result(self) -> dict[str, Any]:
        """What goes to the server (MCP's ``ElicitResult``)."""
        return self.model_dump(exclude_none=True, exclude={"rerun"})


def elicitation_answer(resumed: Any) -> ElicitAnswer | None:
    """`resumed` as an elicitation answer if it is shaped like one (has ``action``), else None.

    Raises pydantic's ValidationError for a value with ``action`` that is not a
    valid answer (an unknown action, content that is not an object).
    """
    if not isinstance(resumed, dict) or "action" not in resumed:
        return None
    body = {k: v for k, v in resumed.items() if k in ("action", "content", "rerun")}
    return ElicitAnswer.model_validate(body)


def elicitation_pause(server: str, tool: str, params: dict[str, Any]) -> dict[str, Any]:
    """The pause data for an elicitation request (`params` as the server sent them)."""
    mode = params.get("mode") or "form"
    ask: dict[str, Any] = {"mode": mode}
    if mode == "url":
        ask.update({k: params[k] for k in ("url", "elicitationId") if k in params})
    else:
        schema = params.get("requestedSchema")
        ask["requestedSchema"] = schema if isinstance(schema, dict) else {"type": "object", "properties": {}}
    return {
        "message": str(params.get("message") or f"{server} asks for input"),
        "mcp": {"server": server, "tool": tool, "elicitation": ask},
    }


def content_errors(schema: dict[str, Any], content: Any) -> list[str]:
    """What is wrong with `content` for the requested schema (empty when it fits)."""
    import jsonschema  # a dependency of the mcp SDK; loaded only when an answer is checked

    try:
        validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator = validator_cls(schema, format_checker=validator_cls.FORMAT_CHECKER)
        found = sorted(validator.iter_errors(content), key=lambda e: list(e.path))
    except jsonschema.SchemaError as exc:
        return [f"the server's requested schema is not valid: {exc.message}"]
    return [f"{'.'.join(str(p) for p in e.path) or 'answer'}: {e.message}" for e in found]


class ElicitationRequest:
    """An interrupt that is an MCP server's elicitation request, with answer builders.

    Attributes:
        part: The interrupted tool-request part.
        server: The server's name; tool: its tool that asked.
        message: What the server asks.
        mode: ``"form"`` (answer with `content`) or ``"url"`` (open `url`, then accept).
        requested_schema: The JSON schema of the content (form mode), else None.
        url: The page to open (url mode), else None.

    Example:
        >>> ask = ElicitationRequest.claim(res.interrupts[0])             # doctest: +SKIP
        >>> await chat.resume(restart=[ask.accept({"name": "Ada"})])      # doctest: +SKIP
    """

    def __init__(self, part: Part, data: dict[str, Any]) -> None:
        mcp = data["mcp"]
        ask = mcp["elicitation"]
        self.part = part
        self.server = str(mcp.get("server", ""))
        self.tool = str(mcp.get("tool", ""))
        self.message = str(data.get("message", ""))
        self.mode = str(ask.get("mode") or "form")
        schema = ask.get("requestedSchema")
        self.requested_schema: dict[str, Any] | None = schema if isinstance(schema, dict) else None
        self.url: str | None = ask.get("url")

    @classmethod
    def claim(cls, interrupt: AgentInterrupt | Part) -> ElicitationRequest | None:
        """`interrupt` as an elicitation request, or None for any other interrupt."""
        part = interrupt.part if isinstance(interrupt, AgentInterrupt) else interrupt
        data = (part.metadata or {}).get("interrupt") if part.is_interrupt else None
        mcp = data.get("mcp") if isinstance(data, dict) else None
        if not isinstance(mcp, dict) or not isinstance(mcp.get("elicitation"), dict):
            return None
        assert isinstance(data, dict)
        return cls(part, data)

    def check(self, content: Any) -> list[str]:
        """What is wrong with `content` for the requested schema (empty when it fits)."""
        if self.requested_schema is None:
            return []
        return content_errors(self.requested_schema, content)

    @property
    def resumable(self) -> bool:
        """Whether the question is answered from its stored state (2026-07-28), so from any
        process; False for a 2025-era question, answered only while its call is open."""
        mcp = (self.part.metadata or {}).get("interrupt", {}).get("mcp", {})
        return isinstance(mcp.get("inputRequired"), dict)

    def answer(
        self, action: Literal["accept", "decline", "cancel"], content: Any = None, *, rerun: bool = False
    ) -> Part:
        """The restart part that sends `action` (and `content`) to the server. Does not send.

        With `rerun`, a 2025-era call that was lost (`MCPCallLostError`) runs again
        from its start, and the answer goes to the server when it asks the same
        question again (ignored while the call is still open, and for 2026-07-28
        questions, which are never lost).
        """
        resumed: dict[str, Any] = {"action": action}
        if content is not None:
            resumed["content"] = content
        if rerun:
            resumed["rerun"] = True
        try:
            ElicitAnswer.model_validate(resumed)
        except ValidationError as exc:
            raise ValueError(f"not an elicitation answer: {exc}") from exc
        return restart_part(self.part, resumed=resumed)

    def accept(self, content: dict[str, Any] | None = None, *, rerun: bool = False) -> Part:
        """Accept, with `content` for the requested schema (goes in ``restart``)."""
        if content is None and self.mode != "url":
            content = {}  # a form answered with nothing: an empty object (url mode sends none)
        return self.answer("accept", content, rerun=rerun)

    def decline(self, *, rerun: bool = False) -> Part:
        """Decline to answer (goes in ``restart``)."""
        return self.answer("decline", rerun=rerun)

    def cancel(self, *, rerun: bool = False) -> Part:
        """Dismiss the question without a choice (goes in ``restart``)."""
        return self.answer("cancel", rerun=rerun)

    def __repr__(self) -> str:
        return f"ElicitationRequest(server={self.server!r}, tool={self.tool!r}, message={self.message!r})"
