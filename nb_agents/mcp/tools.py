"""`MCPTool`: one tool of an MCP server, as a `Tool` an agent can call.

The tool keeps the server's JSON schemas as they are (the model sees them;
input is checked against them with ``jsonschema`` before anything is sent),
its annotations (for `ToolApproval`, see `nb_agents.mcp.approval`), and runs
each call through its `MCPServer`:

* progress notifications become progress chunks (`nb_agents.mcp.progress`);
* an elicitation request pauses the turn (`nb_agents.mcp.elicitation`): the
  call is held by the server under (session id, tool name, call ref) until a
  restart of the same call brings the answer, and then goes on;
* the result becomes the tool's output: ``structuredContent`` when the server
  gives it, else the text of its content blocks (the blocks themselves when
  some are not text). A result marked ``isError`` reaches the model as a
  `ToolFail`, and the turn goes on.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import InitErrorDetails, PydanticCustomError

from ..errors import InvalidArgumentError
from ..interrupts import Interrupt
from ..tools import Tool, ToolContext, ToolFail
from .calls import Asked, Call, Finished, Progress
from .connection import on_portal
from .elicitation import content_errors, elicitation_answer, elicitation_pause
from .errors import MCPCallLostError, MCPSchemaError
from .progress import Progress as ProgressReport
from .progress import progress_chunk

if TYPE_CHECKING:
    from .server import MCPServer

__all__ = ["MCPTool", "call_key", "tool_output"]

_AnyInput = create_model("MCPToolInput", __config__=ConfigDict(extra="allow"))

CallKey = tuple[str, str, str]


def call_key(ctx: ToolContext) -> CallKey:
    """What identifies one tool call across turns: (session id, tool name, call ref)."""
    session_id = getattr(ctx.session, "session_id", None) or ""
    return (str(session_id), ctx.name, ctx.ref or "")


def _check_schema(server: str, tool: str, what: str, schema: Any) -> None:
    import jsonschema

    hint = f"; leave the tool out with MCPServer(..., exclude=[{tool!r}]) or fix the server"
    if not isinstance(schema, dict):
        raise MCPSchemaError(
            f"MCP server '{server}' lists tool '{tool}' with an {what} schema that is not a JSON "
            f"object: {schema!r}{hint}",
            server=server,
        )
    if schema.get("type") != "object":
        raise MCPSchemaError(
            f"MCP server '{server}' lists tool '{tool}' with an {what} schema whose type is "
            f"{schema.get('type')!r}, not 'object' (MCP requires an object schema){hint}",
            server=server,
        )
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "the root"
        raise MCPSchemaError(
            f"MCP server '{server}' lists tool '{tool}' with a malformed {what} schema "
            f"(at {where}): {exc.message}{hint}",
            server=server,
        ) from None


def tool_output(result: Any) -> tuple[Any, bool]:
    """A ``CallToolResult`` as (the output the model sees, whether it is an error)."""
    if getattr(result, "structuredContent", None) is not None and not result.isError:
        return result.structuredContent, False
    blocks = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in result.content]
    texts = [b["text"] for b in blocks if b.get("type") == "text"]
    output: Any = "\n".join(texts) if len(texts) == len(blocks) else blocks
    return output, bool(result.isError)


class MCPTool(Tool):
    """A tool of an MCP server. `MCPServer.list_tools` builds them; do not build one directly.

    Attributes:
        server: The `MCPServer` it belongs to.
        remote_name: The tool's name on the server (``name`` may carry a prefix).
        title: The server's display title for it, if any.
    """

    def __init__(
        self, server: MCPServer, listed: dict[str, Any], *, name: str, needs_approval: bool | None
    ) -> None:
        remote = str(listed["name"])
        _check_schema(server.name, remote, "input", listed.get("inputSchema"))
        if listed.get("outputSchema") is not None:
            _check_schema(server.name, remote, "output", listed["outputSchema"])
        super().__init__(
            None,
            name=name,
            description=str(listed.get("description") or listed.get("title") or ""),
            input_model=_AnyInput,
            unpack_input=False,
        )
        self.server = server
        self.remote_name = remote
        self.title: str | None = listed.get("title")
        self._input = {k: v for k, v in listed["inputSchema"].items() if k != "$schema"}
        self._output: dict[str, Any] | None = listed.get("outputSchema")
        self.annotations = dict(listed.get("annotations") or {})
        self.needs_approval = needs_approval
        self.approval_info = {
            "mcp": {
                "server": server.name,
                "tool": remote,
                "annotations": self.annotations,
                "trusted": server.trusted,
            }
        }

    @property
    def input_schema(self) -> dict[str, Any]:
        return self._input

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self._output

    # -- checks ------------------------------------------------------------------------------
    def parse_input(self, raw: Any) -> BaseModel:
        """Check raw input against the server's schema; raises pydantic's ValidationError."""
        value = raw if raw is not None else {}
        errors = content_errors(self._input, value)
        if errors:
            raise ValidationError.from_exception_data(
                self.name,
                [
                    InitErrorDetails(
                        type=PydanticCustomError("json_schema", "{problem}", {"problem": e}),
                        loc=(),
                        input=value,
                    )
                    for e in errors
                ],
            )
        return _AnyInput.model_validate(value if isinstance(value, dict) else {})

    def check_resume(self, raw: Any, pause: dict[str, Any] | None = None) -> None:
        """A restart's ``resumed``: anything, but an elicitation answer must be well formed and,
        accepted, fit the schema the server asked with (checked before anything is claimed)."""
        answer = elicitation_answer(raw)
        asked = ((pause or {}).get("mcp") or {}).get("elicitation") if isinstance(pause, dict) else None
        schema = asked.get("requestedSchema") if isinstance(asked, dict) else None
        if answer is not None and answer.action == "accept" and isinstance(schema, dict):
            problems = content_errors(schema, answer.content or {})
            if problems:
                raise InvalidArgumentError(
                    f"the answer to MCP server '{self.server.name}''s question does not fit its "
                    f"schema: {'; '.join(problems)}. Nothing was sent; answer it again."
                )

    def approval_needed(self, resumed: Any = None) -> bool | None:
        # An answer to a question the call asked: the call got past the gate when it started.
        # Nothing runs unapproved this way: `invoke` sends an answer only to an open call,
        # and refuses one without (so a lost call is reported as such, not held again).
        try:
            answering = elicitation_answer(resumed) is not None
        except ValidationError:
            answering = False
        return False if answering else self.needs_approval

    # -- running -----------------------------------------------------------------------------
    async def invoke(self, raw_input: Any, ctx: ToolContext) -> Any:
        key = call_key(ctx)
        try:
            answer = elicitation_answer(ctx.resumed)
        except ValidationError as exc:
            raise InvalidArgumentError(f"not an answer to '{self.name}''s question: {exc}") from exc
        if answer is not None:
            call = self.server.take(key)
            if call is None:
                raise self._lost(ctx)
            question = call.question or {}
            schema = question.get("requestedSchema")
            if answer.action == "accept" and isinstance(schema, dict):
                problems = content_errors(schema, answer.content or {})
                if problems:
                    self.server.hold(key, call)  # the question stays open
                    raise InvalidArgumentError(
                        f"the answer to MCP server '{self.server.name}''s question does not fit its "
                        f"schema: {'; '.join(problems)}. Nothing was sent; answer it again."
                    )
            await on_portal(self.server.reply(call, answer.model_dump(exclude_none=True)))
        else:
            old = self.server.take(key)
            if old is not None:  # restarted without an answer: the old call is dropped, a new one runs
                await on_portal(self.server.drop(old))
            try:
                self.parse_input(raw_input)
            except ValidationError as exc:
                raise ToolFail(f"Invalid input for tool '{self.name}': {exc}") from exc
            call = await on_portal(self.server.start_call(self.remote_name, raw_input or {}))
        return await self._follow(call, key, ctx)

    async def _follow(self, call: Call, key: CallKey, ctx: ToolContext) -> Any:
        try:
            while True:
                event = await on_portal(call.next())
                if isinstance(event, Progress):
                    report = ProgressReport(
                        self.server.name, self.name, ctx.ref, event.progress, event.total, event.message
                    )
                    await ctx.send_chunk(progress_chunk(report))
                elif isinstance(event, Asked):
                    self.server.hold(key, call)
                    raise Interrupt(elicitation_pause(self.server.name, self.remote_name, event.params))
                elif isinstance(event, Finished):
                    output, failed = tool_output(event.result)
                    if failed:
                        raise ToolFail(output if isinstance(output, str) else str(output))
                    return output
                else:
                    raise self.server.call_error(self.remote_name, event.error)
        except asyncio.CancelledError:
            if not self.server.holds(key):  # the turn was aborted while the call ran: stop it
                self.server.drop_soon(call)
            raise

    def _lost(self, ctx: ToolContext) -> MCPCallLostError:
        ref = f" (ref {ctx.ref})" if ctx.ref else ""
        return MCPCallLostError(
            f"MCP server '{self.server.name}': the call to '{self.remote_name}'{ref} that asked this "
            "question is no longer open (this process restarted, or the server was closed or "
            "reconnected since it asked), so the answer was not sent. Run the call again: restart "
            "it without an answer (interrupt.restart()), or ask the agent again.",
            server=self.server.name,
        )

    def __repr__(self) -> str:
        return f"MCPTool(name={self.name!r}, server={self.server.name!r})"
