"""The prompt agent's turn: model calls, tool rounds, pauses and resumes.

One turn = (resolve the resume, if any) then loop: call the model; if it asks
for tools, strip the control metadata from its calls (a model's call never
carries an approval, an edit or a deadline mark: `interrupts.untrusted_call`),
then run them all (`ToolRunner`); if any tool paused, the model message
is rewritten with the pause marks, the synthetic ``role: tool`` chunk is
emitted and the turn ends ``interrupted``; otherwise the tool message is
appended and the model called again. The history list is extended, never
copied per step, and messages already in it are never re-validated.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..errors import FailedPreconditionError, InternalError, InvalidArgumentError, NbAgentsError
from ..interrupts import untrusted_call
from ..middleware import Middleware
from ..models.base import Model, resolve_model
from ..session import Session, TurnContext
from ..tools import Tool
from ..toolsets import Toolset, ToolTable, is_toolset
from ..types import (
    AgentInput,
    AgentStreamChunk,
    GenerateRequest,
    GenerateResponse,
    Message,
    ModelResponseChunk,
    Part,
)
from . import observe
from .decision import Call, Decision, decide
from .resume import validate_resume
from .spec import StoredRules
from .tool_round import Paused, ToolRunner, mark_paused, tool_response

__all__ = ["PromptTurn"]

ModelCall = Callable[[GenerateRequest], Awaitable[GenerateResponse]]
_MODEL_REASONS = {"stop", "length", "blocked", "interrupted", "other", "unknown"}


class PromptTurn:
    """The turn handler behind `define_agent`: a model with tools."""

    def __init__(
        self,
        *,
        model: str | Model,
        system: str | None,
        tools: Sequence[Tool | Toolset],
        use: Sequence[Middleware],
        config: Any,
        max_turns: int,
    ) -> None:
        self._model_spec = model
        self._model: Model | None = None
        self.system = system
        fixed: dict[str, Tool] = {}
        toolsets: list[Toolset] = []
        for t in tools:
            if is_toolset(t):
                toolsets.append(t)  # type: ignore[arg-type]  # is_toolset said so
                continue
            assert isinstance(t, Tool)
            if t.name in fixed:
                raise ValueError(f"two tools are named '{t.name}'")
            fixed[t.name] = t
        self.toolsets = toolsets
        self.tools: ToolTable = ToolTable(fixed, toolsets)
        self.use = list(use)
        self.config = config
        self.max_turns = max_turns
        self._model_wrappers = [mw for mw in self.use if type(mw).wrap_model is not Middleware.wrap_model]
        self._rebuilt()
        self._preamble = (
            [Message(role="system", content=[Part(text=system)], metadata={"preamble": True})]
            if system
            else []
        )

    def replace_tools(self, tools: Sequence[Tool]) -> None:
        """Use `tools` from the next tool call on, in place of the tools of the same names."""
        self.tools.replace_fixed(tools)
        self._rebuilt()

    def _rebuilt(self) -> None:
        self._runner = ToolRunner(self.tools, self.use)
        self._definitions = [t.definition() for t in self.tools.values()]

    async def _list_toolsets(self) -> ToolRunner:
        """List every toolset (they cache and reconnect); the runner for this turn's tools."""
        listings = [await ts.list_tools() for ts in self.toolsets]
        if self.tools.rebuild(listings):
            self._rebuilt()
        return self._runner

    @property
    def model(self) -> Model:
        if self._model is None:
            self._model = resolve_model(self._model_spec)
        return self._model

    def validate_input(self, inp: AgentInput, session: Session) -> None:
        """Reject what can never run; called before the turn claims anything."""
        if inp.message is None and inp.resume is None:
            raise InvalidArgumentError("agent input message or resume is required")
        if inp.message is not None:
            msg = inp.message
            if msg.role != "user" or any(p.tool_request or p.tool_response for p in msg.content):
                raise InvalidArgumentError(
                    "agent input message must be a user message without toolRequest or toolResponse "
                    "parts; to answer an interrupt, use AgentInput.resume instead"
                )
        if inp.resume is not None:
            validate_resume(
                inp.resume, session.messages, self.tools, partial=bool(inp.partial), retry=bool(inp.retry)
            )

    async def decide_answers(
        self, inp: AgentInput, session: Session, principal: str | None, stored_rules: StoredRules
    ) -> dict[tuple[str, str | None], Decision]:
        """The decision step of an answer, before it is claimed: who decided each call it restarts may
        run (`decision.decide`), by ``(name, ref)``.

        The toolsets are listed first, so that an MCP server's answer is checked
        (`validate_resume`) and decided on its real tools, not stand-ins. The
        session's rules are read once, when a decision first needs them.
        """
        resume = inp.resume
        assert resume is not None
        runner = self._runner
        if self.toolsets:
            runner = await self._list_toolsets()
            validate_resume(
                resume, session.messages, self.tools, partial=bool(inp.partial), retry=bool(inp.retry)
            )
        read: list[list[dict[str, Any]]] = []

        async def live() -> list[dict[str, Any]]:
            if not read:
                read.append(await stored_rules())
            return read[0]

        decided: dict[tuple[str, str | None], Decision] = {}
        for part in resume.restart:
            tr = part.tool_request
            tool = runner.tools.get(tr.name) if tr is not None else None
            if tr is None or tool is None:
                continue
            meta = part.metadata or {}
            call = Call(tr.name, tr.ref, tr.input, meta.get("resumed"), meta.get("expired"), principal)
            decided[(tr.name, tr.ref)] = await decide(call, tool, runner.gate, live)
        return decided

    async def __call__(self, inp: AgentInput, ctx: TurnContext) -> Message | None:
        messages = ctx.session.messages  # the invocation already appended the user message
        index = 0
        runner = await self._list_toolsets() if self.toolsets else self._runner
        if inp.resume is not None:
            # the answers were checked and decided before the claim (`decide_answers`)
            paused, tool_msg, model_msg = await runner.resume(inp.resume, messages[-1], ctx)
            messages[-1] = model_msg
            if paused:
                return await self._pause(ctx, model_msg)
            assert tool_msg is not None
            messages.append(tool_msg)
            if ctx.streaming:
                chunk = ModelResponseChunk(role="tool", index=index, content=tool_msg.content)
                # the built-in handler's chunks are built right: straight to the sink (a handler of
                # the user's goes through `TurnContext.send_chunk`, which checks what it sends)
                await ctx._emit(AgentStreamChunk(model_chunk=chunk))
            index += 1
        for _ in range(self.max_turns):
            response = await self._call_model(messages, ctx, index)
            msg, reason = response.message, response.finish_reason or "unknown"
            if response.candidates:  # the legacy shape: the first candidate says what the fields do not
                msg, reason = response.resolved_message(), response.resolved_finish_reason()
            if msg is None:
                raise InternalError(f"model '{self.model.name}' returned no message")
            requests = msg.tool_requests
            if any(p.metadata for p in requests):  # nothing the model writes decides anything
                msg = msg.model_copy(
                    update={"content": [untrusted_call(p) if p.tool_request else p for p in msg.content]}
                )
                requests = msg.tool_requests
            if not requests:
                messages.append(msg)
                ctx.finish_reason = reason if reason in _MODEL_REASONS else "other"  # type: ignore[assignment]
                return msg
            outcomes = await runner.run(requests, ctx, restarted=False)
            if any(isinstance(o, Paused) for o in outcomes):
                paused_msg = mark_paused(msg, requests, dict(enumerate(outcomes)))
                messages.append(paused_msg)
                return await self._pause(ctx, paused_msg)
            tool_msg = Message(
                role="tool",
                content=[
                    tool_response(p, o)  # type: ignore[arg-type]  # no call paused: each is Done
                    for p, o in zip(requests, outcomes, strict=True)
                ],
            )
            messages.append(msg)
            messages.append(tool_msg)
            index += 1
            if ctx.streaming:
                chunk = ModelResponseChunk(role="tool", index=index, content=tool_msg.content)
                await ctx._emit(AgentStreamChunk(model_chunk=chunk))
            index += 1
        raise FailedPreconditionError(
            f"Exceeded maximum tool call iterations ({self.max_turns}); raise max_turns= on the agent "
            "if the model legitimately needs more tool rounds."
        )

    async def _pause(self, ctx: TurnContext, msg: Message) -> Message:
        """End the turn paused: Genkit's synthetic ``role: tool`` chunk with every request."""
        if ctx.streaming:
            chunk = ModelResponseChunk(role="tool", content=msg.tool_requests)
            await ctx._emit(AgentStreamChunk(model_chunk=chunk))
        ctx.finish_reason = "interrupted"
        return msg

    async def _call_model(self, messages: list[Message], ctx: TurnContext, index: int) -> GenerateResponse:
        model = self._model if self._model is not None else self.model  # a name resolves at first use
        definitions = self._definitions
        # validated: the messages and tools are models already, which pydantic takes as they are
        # (`model_construct` walks every field in Python, and is slower for this model)
        request = GenerateRequest(
            messages=[*self._preamble, *messages],
            # the agent's model config, with this call's keys laid over it
            config={**(self.config or {}), **ctx.config} if ctx.config else self.config,
            tools=definitions,
            tool_choice=None,
            output=None,
        )

        async def on_chunk(chunk: ModelResponseChunk) -> None:
            if chunk.index is None or chunk.role is None:
                chunk = chunk.model_copy(
                    update={
                        "index": index if chunk.index is None else chunk.index,
                        "role": chunk.role or "model",
                    }
                )
            await ctx._emit(AgentStreamChunk(model_chunk=chunk))

        call: ModelCall = lambda req: model.generate(req, on_chunk)  # noqa: E731
        for mw in reversed(self._model_wrappers):
            call = _bind(mw, call)
        watcher = observe.observer
        t0 = time.monotonic()
        outcome: str | None = "failed"
        try:
            response = await (
                call(request) if watcher is None else watcher.model_call(ctx, model.name, request, call)
            )
            outcome = response.finish_reason
            return response
        except NbAgentsError:
            raise
        except Exception as exc:
            raise InternalError(
                f"model '{model.name}' failed: {exc}",
                details={
                    "type": type(exc).__name__,
                    "public": f"model '{model.name}' failed: {type(exc).__name__}",
                    "traceback": traceback.format_exc(),
                },
            ) from exc
        finally:
            observe.step(ctx, "m", model.name, None, t0, outcome)  # the turn's timeline


def _bind(mw: Middleware, nxt: ModelCall) -> ModelCall:
    return lambda req: mw.wrap_model(req, nxt)
