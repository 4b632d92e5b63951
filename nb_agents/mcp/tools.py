"""`MCPTool`: one tool of an MCP server, as a `Tool` an agent can call.

The tool keeps the server's JSON schemas as they are (the model sees them;
input is checked against them with ``jsonschema`` before anything is sent),
its annotations (for `ToolApproval`, see `nb_agents.mcp.approval`), and runs
each call through its `MCPServer`:

* progress notifications become progress chunks (`nb_agents.mcp.progress`);
* a question pauses the turn (`nb_agents.mcp.elicitation`). A 2025-era
  server asks in the middle of the call, which is held by the server under
  (session id, tool name, call ref) until a restart of the same call brings
  the answer, and then goes on. A 2026-07-28 server returns its question as
  the result; the pause keeps its state, and the answer, from any process,
  is sent with the retry (`nb_agents.mcp.rounds`);
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

from .._sync import on_portal
from ..errors import InvalidArgumentError
from ..interrupts import Interrupt
from ..tools import Tool, ToolContext, ToolFail
from .calls import Asked, Call, Finished, Progress
from .connection import describe
from .elicitation import ElicitAnswer, content_errors, elicitation_answer, elicitation_pause
from .errors import MCPCallLostError, MCPSchemaError
from .progress import Progress as ProgressReport
from .progress import progress_chunk
from .rounds import MAX_AUTOMATIC_ROUNDS, Retry, Round, Supply, questions_of, state_refused

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
    if getattr(result, "structured_content", None) is not None and not result.is_error:
        return result.structured_content, False
    blocks = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in result.content]
    texts = [b["text"] for b in blocks if b.get("type") == "text"]
    output: Any = "\n".join(texts) if len(texts) == len(blocks) else blocks
    return output, bool(result.is_error)


def stored_pause(ctx: ToolContext) -> tuple[dict[str, Any], Any] | None:
    """The pause this restart answers, as the turn stored it: (its data, the call's input).

    Read from the session (the paused model message is its last message while a
    resume runs), never from the restart part the caller sent.
    """
    messages = getattr(ctx.session, "messages", None) or []
    for part in messages[-1].content if messages else ():
        tr = part.tool_request
        if tr is not None and tr.name == ctx.name and tr.ref == ctx.ref and part.is_interrupt:
            data = (part.metadata or {}).get("interrupt")
            return (data if isinstance(data, dict) else {}), tr.input
    return None


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
        if answer is None:
            old = self.server.take(key)
            if old is not None:  # restarted without an answer: the old call is dropped, a new one runs
                await on_portal(self.server.drop(old))
            try:
                self.parse_input(raw_input)
            except ValidationError as exc:
                raise ToolFail(f"Invalid input for tool '{self.name}': {exc}") from exc
            arguments = raw_input or {}
            call = await on_portal(self.server.start_call(self.remote_name, arguments))
            return await self._follow(call, key, ctx, arguments, Supply())
        return await self._answer(answer, key, ctx)

    async def _answer(self, answer: ElicitAnswer, key: CallKey, ctx: ToolContext) -> Any:
        """A restart that answers the question this call asked."""
        stored = stored_pause(ctx)
        data, arguments = stored if stored is not None else ({}, {})
        asked = (data.get("mcp") or {}).get("elicitation") or {}
        question = {"message": data.get("message"), **asked}  # as the server sent it (its params)
        open_call = self.server.take(key)
        if open_call is not None and open_call.question is not None:
            question = open_call.question
        schema = question.get("requestedSchema")
        if answer.action == "accept" and isinstance(schema, dict):
            problems = content_errors(schema, answer.content or {})
            if problems:
                if open_call is not None:
                    self.server.hold(key, open_call)  # the question stays open
                raise InvalidArgumentError(
                    f"the answer to MCP server '{self.server.name}''s question does not fit its "
                    f"schema: {'; '.join(problems)}. Nothing was sent; answer it again."
                )
        arguments = arguments if isinstance(arguments, dict) else {}
        if open_call is not None:  # a 2025-era question: the call that asked is open in this process
            await on_portal(self.server.reply(open_call, answer.result()))
            return await self._follow(open_call, key, ctx, arguments, Supply())
        stored_round = Round.from_pause(data)
        if stored_round is not None:  # a 2026-07-28 question: its state came with the pause
            round_, asked = stored_round
            round_.answer(asked, answer.result())
            if round_.open_key() is not None:  # more questions of the same result: ask the next
                raise Interrupt(round_.pause(self.server.name, self.remote_name))
            return await self._retry(round_.retry(), key, ctx, arguments, round_.supply)
        if answer.rerun:  # the person chose to run the lost call again, with this answer
            supply = Supply()
            supply.add(question, answer.result())
            call = await on_portal(self.server.start_call(self.remote_name, arguments))
            return await self._follow(call, key, ctx, arguments, supply)
        raise self._lost(ctx)

    async def _retry(
        self, retry: Retry, key: CallKey, ctx: ToolContext, arguments: dict[str, Any], supply: Supply
    ) -> Any:
        call = await on_portal(self.server.start_call(self.remote_name, arguments, retry))
        return await self._follow(call, key, ctx, arguments, supply, sent_state=retry.request_state)

    async def _follow(
        self,
        call: Call,
        key: CallKey,
        ctx: ToolContext,
        arguments: dict[str, Any],
        supply: Supply,
        *,
        sent_state: str | None = None,
    ) -> Any:
        automatic = 0  # rounds in a row that no person answered
        delay = 0.05
        try:
            while True:
                event = await on_portal(call.next())
                if isinstance(event, Progress):
                    report = ProgressReport(
                        self.server.name, self.name, ctx.ref, event.progress, event.total, event.message
                    )
                    await ctx.send_chunk(progress_chunk(report))
                    continue
                if isinstance(event, Asked):  # a 2025-era server asks in the middle of the call
                    given = supply.get(event.params)
                    if given is not None:  # the same question as before the call was run again
                        await on_portal(self.server.reply(call, given))
                        continue
                    self.server.hold(key, call)
                    raise Interrupt(elicitation_pause(self.server.name, self.remote_name, event.params))
                if not isinstance(event, Finished):
                    if sent_state is not None and state_refused(event.error):
                        # the server no longer reads the state (expired, restarted): run the call
                        # again from its first round; the answers given are supplied when asked
                        self.server.logger.info(
                            "MCP server '%s' refused the state of a call to '%s' (%s): running it again",
                            self.server.name,
                            self.remote_name,
                            describe(event.error),
                        )
                        sent_state = None
                        call = await on_portal(self.server.start_call(self.remote_name, arguments))
                        continue
                    raise self.server.call_error(self.remote_name, event.error)
                if not _input_required(event.result):
                    output, failed = tool_output(event.result)
                    if failed:
                        raise ToolFail(output if isinstance(output, str) else str(output))
                    return output
                # a 2026-07-28 server returned its question(s) instead of a result
                asks, other = questions_of(event.result)
                if other:
                    raise ToolFail(
                        f"MCP server '{self.server.name}' asked for {', '.join(sorted(set(other)))} "
                        f"to run '{self.remote_name}', which nb_agents does not provide"
                    )
                round_ = Round(event.result.request_state, asks, supply=supply)
                round_.fill()
                if round_.open_key() is not None:
                    raise Interrupt(round_.pause(self.server.name, self.remote_name))
                automatic += 1
                if automatic > MAX_AUTOMATIC_ROUNDS:
                    raise ToolFail(
                        f"MCP server '{self.server.name}' kept asking for input to run "
                        f"'{self.remote_name}' ({MAX_AUTOMATIC_ROUNDS} rounds without an answer it took)"
                    )
                if not asks:  # only state: the server is not done yet; wait a little and ask again
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 0.25)
                retry = round_.retry()
                sent_state = retry.request_state
                call = await on_portal(self.server.start_call(self.remote_name, arguments, retry))
        except asyncio.CancelledError:
            if not self.server.holds(key):  # the turn was aborted while the call ran: stop it
                self.server.drop_soon(call)
            raise

    def _lost(self, ctx: ToolContext) -> MCPCallLostError:
        ref = f" (ref {ctx.ref})" if ctx.ref else ""
        return MCPCallLostError(
            f"MCP server '{self.server.name}': the call to '{self.remote_name}'{ref} that asked this "
            "question is no longer open (this process restarted, or the server was closed or "
            "reconnected since it asked; this server speaks a protocol revision before 2026-07-28, "
            "whose questions live only as long as their call), so the answer was not sent and the "
            "call cannot be resumed. To run it again from its start and give this answer when the "
            "server asks the same question, answer with rerun=True "
            "(ElicitationRequest.accept(..., rerun=True)); whatever the tool did before it asked, it "
            "does again. Or restart it without an answer (interrupt.restart()) to be asked anew.",
            server=self.server.name,
        )

    def __repr__(self) -> str:
        return f"MCPTool(name={self.name!r}, server={self.server.name!r})"


def _input_required(result: Any) -> bool:
    return type(result).__name__ == "InputRequiredResult"
