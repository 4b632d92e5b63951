"""The prompt agent's turn: model calls, tool rounds, pauses and resumes.

One turn = (resolve the resume, if any) then loop: call the model; if it asks
for tools, run them all; if any tool paused, rewrite the model message with
``metadata.interrupt`` on the paused calls and ``metadata.pendingOutput`` on
the ones that finished, emit the synthetic ``role: tool`` chunk and end the
turn ``interrupted``; otherwise append the tool message and call the model
again. The history list is extended, never copied per step, and messages
already in it are never re-validated.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from .errors import FailedPreconditionError, InternalError, InvalidArgumentError, NbAgentsError
from .interrupts import Interrupt
from .middleware import Middleware
from .models.base import Model, resolve_model
from .resume import validate_resume
from .session import Session, TurnContext
from .tools import Tool, ToolContext, ToolFail
from .types import (
    AgentInput,
    AgentStreamChunk,
    GenerateRequest,
    GenerateResponse,
    Message,
    ModelResponseChunk,
    Part,
    ToolResponse,
    ToolResume,
)

__all__ = ["CALL_CONFIG", "PromptTurn", "merged_config"]

CALL_CONFIG: ContextVar[dict[str, Any] | None] = ContextVar("nb_agents_call_config", default=None)
"""Model config for the current call (``chat.send(..., config=)``), over the agent's."""


def merged_config(agent_config: Any, call_config: dict[str, Any] | None) -> Any:
    """The agent's model config with the per-call keys laid over it."""
    if not call_config:
        return agent_config
    return {**(agent_config or {}), **call_config}


@dataclass
class _Done:
    output: Any


@dataclass
class _Paused:
    data: dict[str, Any] | None


ToolOutcome = _Done | _Paused


class PromptTurn:
    """The turn handler behind `define_agent`: a model with tools."""

    def __init__(
        self,
        *,
        model: str | Model,
        system: str | None,
        tools: Sequence[Tool],
        use: Sequence[Middleware],
        config: Any,
        max_turns: int,
    ) -> None:
        self._model_spec = model
        self._model: Model | None = None
        self.system = system
        self.tools: dict[str, Tool] = {}
        for t in tools:
            if t.name in self.tools:
                raise ValueError(f"two tools are named '{t.name}'")
            self.tools[t.name] = t
        self.use = list(use)
        self.config = config
        self.max_turns = max_turns
        self._definitions = [t.definition() for t in self.tools.values()]
        self._preamble = (
            [Message(role="system", content=[Part(text=system)], metadata={"preamble": True})]
            if system
            else []
        )

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
            validate_resume(inp.resume, session.messages, self.tools)

    async def __call__(self, inp: AgentInput, ctx: TurnContext) -> Message | None:
        session = ctx.session
        messages = session.messages  # the runner already appended the user message
        index = 0
        if inp.resume is not None:
            # the runner has validated the answers (before claiming the snapshot)
            paused, tool_msg, model_msg = await self._resolve_resume(inp.resume, messages[-1], ctx)
            messages[-1] = model_msg
            if paused:
                await self._emit_pause(ctx, model_msg)
                ctx.finish_reason = "interrupted"
                return model_msg
            assert tool_msg is not None
            messages.append(tool_msg)
            await ctx.send_chunk(ModelResponseChunk(role="tool", index=index, content=tool_msg.content))
            index += 1
        for _ in range(self.max_turns):
            response = await self._call_model(messages, ctx, index)
            msg = response.resolved_message()
            if msg is None:
                raise InternalError(f"model '{self.model.name}' returned no message")
            reason = response.resolved_finish_reason()
            requests = msg.tool_requests
            if not requests:
                messages.append(msg)
                ctx.finish_reason = reason if reason in _MODEL_REASONS else "other"  # type: ignore[assignment]
                return msg
            outcomes = await self._run_tools(requests, ctx, restarted=False)
            if any(isinstance(o, _Paused) for o in outcomes.values()):
                paused_msg = _mark_paused(msg, requests, outcomes)
                messages.append(paused_msg)
                await self._emit_pause(ctx, paused_msg)
                ctx.finish_reason = "interrupted"
                return paused_msg
            tool_msg = Message(
                role="tool",
                content=[_response(p, outcomes[i].output) for i, p in enumerate(requests)],  # type: ignore[union-attr]
            )
            messages.append(msg)
            messages.append(tool_msg)
            index += 1
            await ctx.send_chunk(ModelResponseChunk(role="tool", index=index, content=tool_msg.content))
            index += 1
        raise FailedPreconditionError(
            f"Exceeded maximum tool call iterations ({self.max_turns}); raise max_turns= on the agent "
            "if the model legitimately needs more tool rounds."
        )

    # -- model ------------------------------------------------------------------
    async def _call_model(self, messages: list[Message], ctx: TurnContext, index: int) -> GenerateResponse:
        request = GenerateRequest.model_construct(
            messages=[*self._preamble, *messages],
            config=merged_config(self.config, CALL_CONFIG.get()),
            tools=self._definitions,
            tool_choice=None,
            output=None,
        )

        async def on_chunk(chunk: ModelResponseChunk) -> None:
            if chunk.index is None:
                chunk = chunk.model_copy(update={"index": index})
            if chunk.role is None:
                chunk = chunk.model_copy(update={"role": "model"})
            await ctx.send_chunk(AgentStreamChunk(model_chunk=chunk))

        async def call(req: GenerateRequest) -> GenerateResponse:
            return await self.model.generate(req, on_chunk)

        chain = _chain_model(self.use, call)
        try:
            return await chain(request)
        except NbAgentsError:
            raise
        except Exception as exc:
            raise InternalError(
                f"model '{self.model.name}' failed: {exc}",
                details={"traceback": traceback.format_exc()},
            ) from exc

    # -- tools ------------------------------------------------------------------
    async def _run_tools(
        self,
        requests: Sequence[Part],
        ctx: TurnContext,
        *,
        restarted: bool,
    ) -> dict[int, ToolOutcome]:
        """Run the requests at once; key = position in `requests`.

        With `restarted`, the parts are restart parts: their ``resumed`` and
        ``replacedInput`` metadata reach the tool's context.
        """

        async def one(i: int, part: Part) -> ToolOutcome:
            assert part.tool_request is not None
            tr = part.tool_request
            meta = part.metadata or {}
            tctx = ToolContext(
                name=tr.name,
                ref=tr.ref,
                resumed=meta.get("resumed") if restarted else None,
                original_input=meta.get("replacedInput", tr.input),
                metadata=meta,
                session=ctx.session,
            )
            tool = self.tools.get(tr.name)
            try:
                if tool is None:
                    available = ", ".join(self.tools) or "none"
                    raise ToolFail(f"Tool '{tr.name}' is not available (available tools: {available}).")
                run = _chain_tool(self.use, tool.invoke)
                return _Done(await run(tr.input, tctx))
            except Interrupt as sig:
                return _Paused(sig.data)
            except ToolFail as fail:
                return _Done({"error": fail.message})
            except NbAgentsError:
                raise
            except Exception as exc:
                raise InternalError(
                    f"Tool '{tr.name}' failed: {type(exc).__name__}: {exc}",
                    details={"tool": tr.name, "ref": tr.ref, "traceback": traceback.format_exc()},
                ) from exc

        results = await asyncio.gather(*(one(i, p) for i, p in enumerate(requests)), return_exceptions=True)
        outcomes: dict[int, ToolOutcome] = {}
        for i, res in enumerate(results):
            if isinstance(res, BaseException):
                raise res
            outcomes[i] = res
        return outcomes

    async def _resolve_resume(
        self, resume: ToolResume, model_msg: Message, ctx: TurnContext
    ) -> tuple[bool, Message | None, Message]:
        """Apply validated answers to the latest model message.

        Returns (paused again?, the tool message, the rewritten model message).
        """
        responds = {(p.tool_response.name, p.tool_response.ref): p for p in resume.respond if p.tool_response}
        restarts = {(p.tool_request.name, p.tool_request.ref): p for p in resume.restart if p.tool_request}
        requests = list(model_msg.tool_requests)
        outcomes: dict[int, ToolOutcome] = {}
        source: dict[int, str] = {}
        to_run: list[Part] = []
        run_at: list[int] = []
        for i, part in enumerate(requests):
            assert part.tool_request is not None
            key = (part.tool_request.name, part.tool_request.ref)
            meta = part.metadata or {}
            if key in responds:
                outcomes[i] = _Done(responds[key].tool_response.output)  # type: ignore[union-attr]
                source[i] = "respond"
            elif key in restarts:
                restart = restarts[key]
                rmeta = restart.metadata or {}
                if "replacedInput" in rmeta:
                    requests[i] = part.model_copy(
                        update={"tool_request": restart.tool_request}
                    ).with_metadata(replacedInput=rmeta["replacedInput"])
                to_run.append(restart)
                run_at.append(i)
                source[i] = "restart"
            elif "pendingOutput" in meta:
                outcomes[i] = _Done(meta["pendingOutput"])
                source[i] = "pending"
        if to_run:
            ran = await self._run_tools(to_run, ctx, restarted=True)
            for j, i in enumerate(run_at):
                outcomes[i] = ran[j]
        if any(isinstance(o, _Paused) for o in outcomes.values()):
            return True, None, _mark_paused(model_msg, requests, outcomes)
        responses: list[Part] = []
        resolved: list[Part] = []
        for i, part in enumerate(requests):
            assert part.tool_request is not None
            tr = part.tool_request
            meta = part.metadata or {}
            out = outcomes[i]
            assert isinstance(out, _Done)
            if source[i] == "respond":
                responses.append(responds[(tr.name, tr.ref)])
            elif source[i] == "pending":
                responses.append(_response(part, out.output, {"source": "pending"}))
            else:
                responses.append(_response(part, out.output))
            if source[i] == "pending":
                resolved.append(part.with_metadata(pendingOutput=None))
            else:
                resolved.append(
                    part.with_metadata(
                        interrupt=None, pendingOutput=None, resolvedInterrupt=meta.get("interrupt", True)
                    )
                )
        tool_msg = Message(
            role="tool",
            content=responses,
            metadata={"resumed": resume.metadata if resume.metadata is not None else True},
        )
        return False, tool_msg, _replace_requests(model_msg, resolved)

    async def _emit_pause(self, ctx: TurnContext, msg: Message) -> None:
        await ctx.send_chunk(ModelResponseChunk(role="tool", content=msg.tool_requests))


_MODEL_REASONS = {"stop", "length", "blocked", "interrupted", "other", "unknown"}


def _response(request: Part, output: Any, metadata: dict[str, Any] | None = None) -> Part:
    assert request.tool_request is not None
    tr = request.tool_request
    return Part(tool_response=ToolResponse(name=tr.name, ref=tr.ref, output=output), metadata=metadata)


def _replace_requests(msg: Message, requests: Sequence[Part]) -> Message:
    """`msg` with its tool-request parts replaced, in order, by `requests`."""
    it = iter(requests)
    content = [next(it) if p.tool_request is not None else p for p in msg.content]
    return msg.model_copy(update={"content": content})


def _mark_paused(msg: Message, requests: Sequence[Part], outcomes: Mapping[int, ToolOutcome]) -> Message:
    """The model message with paused calls marked and finished ones stashed."""
    marked: list[Part] = []
    for i, part in enumerate(requests):
        out = outcomes.get(i)
        if isinstance(out, _Paused):
            marked.append(
                part.with_metadata(
                    interrupt=out.data if out.data is not None else True,
                    resolvedInterrupt=None,
                    pendingOutput=None,
                )
            )
        elif isinstance(out, _Done):
            # a None output is stashed as {} so that the key survives JSON round-trips
            stash = out.output if out.output is not None else {}
            marked.append(part.with_metadata(pendingOutput=stash, interrupt=None, resolvedInterrupt=None))
        else:
            marked.append(part)
    return _replace_requests(msg, marked)


def _chain_model(
    use: Sequence[Middleware], last: Callable[[GenerateRequest], Awaitable[GenerateResponse]]
) -> Callable[[GenerateRequest], Awaitable[GenerateResponse]]:
    call = last
    for mw in reversed(use):
        call = _bind_model(mw, call)
    return call


def _bind_model(
    mw: Middleware, nxt: Callable[[GenerateRequest], Awaitable[GenerateResponse]]
) -> Callable[[GenerateRequest], Awaitable[GenerateResponse]]:
    async def call(req: GenerateRequest) -> GenerateResponse:
        return await mw.wrap_model(req, nxt)

    return call


def _chain_tool(
    use: Sequence[Middleware], last: Callable[[Any, ToolContext], Awaitable[Any]]
) -> Callable[[Any, ToolContext], Awaitable[Any]]:
    call = last
    for mw in reversed(use):
        call = _bind_tool(mw, call)
    return call


def _bind_tool(
    mw: Middleware, nxt: Callable[[Any, ToolContext], Awaitable[Any]]
) -> Callable[[Any, ToolContext], Awaitable[Any]]:
    async def call(inp: Any, tctx: ToolContext) -> Any:
        return await mw.wrap_tool(inp, tctx, nxt)

    return call
