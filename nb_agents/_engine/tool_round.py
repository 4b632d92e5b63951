"""Tool rounds of a prompt turn: running the calls, pausing, and resuming a paused round.

`ToolRunner.run` runs a model message's tool requests at once: each first
through the one decision step (`decision.decide`: may it run, who decided),
then through the middleware chain. If any call paused (raised `Interrupt`), `mark_paused` rewrites
the model message: ``metadata.interrupt`` on the paused calls, the output of each
finished sibling kept as ``metadata.pendingOutput``. `ToolRunner.resume` applies a
validated answer to such a message: responds supply outputs, restarts run the
tool again (which may pause again), kept outputs are reused, and the rewritten
message (``resolvedInterrupt``) and the tool message (``metadata.resumed``) come
back, as Genkit builds them.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._made import made
from ..errors import InternalError, NbAgentsError
from ..expiry import Expiry, iso, now
from ..interrupts import APPROVAL_PREFIX, Interrupt
from ..middleware import Middleware, ToolApproval
from ..rules import Gate
from ..session import TurnContext
from ..tools import Tool, ToolContext, ToolFail
from ..types import Message, Part, ToolResponse, ToolResume
from . import observe
from .decision import FREE, Call, decide, session_rule
from .ownership import principal_of

__all__ = ["Done", "Paused", "ToolRunner", "gate_of", "mark_paused", "tool_response"]

ToolCall = Callable[[Any, ToolContext], Awaitable[Any]]
_STEP_OUTCOMES = ("done", "paused", "refused")


@dataclass(slots=True)
class Done:
    output: Any
    rule: dict[str, Any] | None = None  # the approval rule that answered the call, if one did


@dataclass(slots=True)
class Paused:
    data: dict[str, Any] | None
    expires_at: str | None = None  # ``metadata.expiresAt`` of the pause, ISO 8601 UTC
    on_expiry: dict[str, Any] | None = None  # ``metadata.onExpiry``: the declared default


def _paused(sig: Interrupt) -> Paused:
    """The outcome of a call that raised `sig`, its deadline counted from now."""
    if sig.expires_in is None:
        return Paused(sig.data)
    default = sig.on_expiry if sig.on_expiry is not None else Expiry.deny()
    return Paused(sig.data, iso(now() + sig.expires_in), default.to_wire())


Outcome = Done | Paused


def gate_of(use: Sequence[Middleware]) -> Gate | None:
    """The agent's approval policy: its `ToolApproval`'s, or None without one (two are refused)."""
    gates = [mw.gate for mw in use if isinstance(mw, ToolApproval)]
    if len(gates) > 1:
        raise ValueError(
            "an agent takes one ToolApproval in use=[...]; give one its allowed_tools and rules together"
        )
    return gates[0] if gates else None


def _chain(use: Sequence[Middleware], last: ToolCall) -> ToolCall:
    call = last
    for mw in reversed(use):
        if type(mw).wrap_tool is Middleware.wrap_tool:
            continue  # a pass-through hook would only add a call per tool call

        def bound(inp: Any, tctx: ToolContext, mw: Middleware = mw, nxt: ToolCall = call) -> Awaitable[Any]:
            return mw.wrap_tool(inp, tctx, nxt)

        call = bound
    return call


class ToolRunner:
    """The tools of one agent, each wrapped once in its middleware chain, behind one decision step."""

    def __init__(self, tools: Mapping[str, Tool], use: Sequence[Middleware]) -> None:
        self.tools = tools
        self.gate = gate_of(use)
        self._calls = {name: _chain(use, tool.invoke) for name, tool in tools.items()}

    async def _one(self, part: Part, turn: TurnContext, restarted: bool) -> Outcome:
        tr = part.tool_request
        assert tr is not None
        meta = part.metadata or {}
        tool = self.tools.get(tr.name)
        call = self._calls.get(tr.name)
        resumed = meta.get("resumed") if restarted else None
        decision = FREE
        if call is not None:
            found = turn.decided.get((tr.name, tr.ref)) if restarted else None  # decided before the claim
            decision = (
                found
                if found is not None
                else await decide(
                    Call(
                        tr.name,
                        tr.ref,
                        tr.input,
                        resumed,
                        meta.get("expired") if restarted else None,
                        principal_of(turn.context),
                    ),
                    tool,
                    self.gate,
                    lambda: self._live_rules(turn),
                )
            )
            if decision is not FREE:
                turn.decisions.append((tr.name, tr.ref, decision, tr.input))
            if decision.verdict == "hold":
                return self._held(tr.name, tool)
            if decision.verdict == "deny":
                return Done(decision.output, decision.rule)
        key = f"{turn.idempotency_base}\n{tr.name}\n{tr.ref or ''}"
        tctx = ToolContext(
            name=tr.name,
            ref=tr.ref,
            resumed=resumed,
            original_input=meta.get("replacedInput", tr.input) if restarted else tr.input,
            metadata=meta,
            session=turn.session,
            context=turn.context,
            idempotency_key=hashlib.sha256(key.encode()).hexdigest()[:32],
            tool=tool,
            send_chunk=turn.send_chunk,
        )
        tctx.answered_by_rule = decision.rule
        if decision.always:
            rule = session_rule(tr.name, tr.ref, tctx.idempotency_key, decision.scope, tr.input)
            if not any(_same_rule(r, rule) for r in turn.new_rules):
                turn.new_rules.append(rule)
        if call is None:
            available = ", ".join(self.tools) or "none"
            return Done({"error": f"Tool '{tr.name}' is not available (available tools: {available})."})
        # recorded before it starts, so a turn aborted while it runs still says it started
        run: dict[str, Any] = {"name": tr.name, "ref": tr.ref, "outcome": "started"}
        turn.tool_runs.append(run)
        turn.tools_started = True  # from here a side effect may happen: the claim is kept
        turn.calls_started += 1
        watcher = observe.observer
        t0 = time.monotonic()
        try:
            output = await (
                call(tr.input, tctx) if watcher is None else watcher.tool_call(turn, tctx, tr.input, call)
            )
            run.update(outcome="done", output=output)
            return Done(output, decision.rule)
        except Interrupt as sig:
            run["outcome"] = "paused"
            return _paused(sig)
        except ToolFail as fail:
            run["outcome"] = "refused"
            return Done({"error": fail.message}, decision.rule)
        except NbAgentsError as exc:
            if exc.ran_nothing:  # the tool promises it did nothing: this call acted on nothing
                turn.calls_started -= 1
                turn.tools_started = turn.calls_started > 0
                run["outcome"] = "not-run"
            else:
                run["outcome"] = "failed"
            raise
        except Exception as exc:
            run["outcome"] = "failed"
            kind = type(exc).__name__
            raise InternalError(
                f"Tool '{tr.name}' failed: {kind}: {exc}",
                details={
                    "tool": tr.name,
                    "ref": tr.ref,
                    "type": kind,
                    "public": f"Tool '{tr.name}' failed: {kind}",  # what a remote client is shown
                    "traceback": traceback.format_exc(),
                },
            ) from exc
        finally:  # the turn's timeline: a call that did not pause, finish or refuse failed
            outcome = run["outcome"]
            observe.step(turn, "t", tr.name, tr.ref, t0, outcome if outcome in _STEP_OUTCOMES else "failed")

    @staticmethod
    async def _live_rules(turn: TurnContext) -> list[dict[str, Any]]:
        """The session's rules now: as stored, and those this turn's answers made."""
        return [*(await turn.stored_rules()), *turn.new_rules]

    def _held(self, name: str, tool: Tool | None) -> Paused:
        """The pause of a call held for a person (Genkit's approval message, and the tool's own info)."""
        gate = self.gate
        extra = tool.approval_info if tool is not None else None
        sig = Interrupt(
            {"message": f"{APPROVAL_PREFIX} {name}", **(extra or {})},
            expires_in=gate.expires_in if gate is not None else None,
            on_expiry=gate.on_expiry if gate is not None else None,
        )
        return _paused(sig)

    async def run(self, requests: Sequence[Part], turn: TurnContext, *, restarted: bool) -> list[Outcome]:
        """Run the requests at once, outcomes in their order.

        With `restarted`, the parts are restart parts: their ``resumed`` and
        ``replacedInput`` metadata reach the tool's context.
        """
        if len(requests) == 1:  # the common case: no tasks to gather
            return [await self._one(requests[0], turn, restarted)]
        results = await asyncio.gather(
            *(self._one(p, turn, restarted) for p in requests), return_exceptions=True
        )
        for res in results:
            if isinstance(res, BaseException):
                raise res
        return results  # type: ignore[return-value]  # no exceptions left

    async def resume(
        self, resume: ToolResume, model_msg: Message, turn: TurnContext
    ) -> tuple[bool, Message | None, Message]:
        """Apply validated answers to the latest model message.

        Returns (paused again?, the tool message, the rewritten model message).
        """
        responds = {(p.tool_response.name, p.tool_response.ref): p for p in resume.respond if p.tool_response}
        restarts = {(p.tool_request.name, p.tool_request.ref): p for p in resume.restart if p.tool_request}
        requests = list(model_msg.tool_requests)
        outcomes: dict[int, Outcome] = {}
        source: dict[int, str] = {}
        to_run: list[Part] = []
        run_at: list[int] = []
        for i, part in enumerate(requests):
            assert part.tool_request is not None
            key = (part.tool_request.name, part.tool_request.ref)
            meta = part.metadata or {}
            if key in responds:
                outcomes[i] = Done(responds[key].tool_response.output)  # type: ignore[union-attr]
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
                outcomes[i] = Done(meta["pendingOutput"], meta.get("pendingRule"))
                source[i] = "pending"
            elif part.is_interrupt:  # left for later by a partial resume: it stays paused as it was
                data = meta.get("interrupt")
                outcomes[i] = Paused(
                    data if isinstance(data, dict) else None, meta.get("expiresAt"), meta.get("onExpiry")
                )
        if to_run:
            for i, outcome in zip(run_at, await self.run(to_run, turn, restarted=True), strict=True):
                outcomes[i] = outcome
        if any(isinstance(o, Paused) for o in outcomes.values()):
            return True, None, mark_paused(model_msg, requests, outcomes)
        responses: list[Part] = []
        resolved: list[Part] = []
        for i, part in enumerate(requests):
            assert part.tool_request is not None
            out = outcomes[i]
            assert isinstance(out, Done)
            if source[i] == "respond":
                tr = part.tool_request
                responses.append(responds[(tr.name, tr.ref)])
            elif source[i] == "pending":
                responses.append(tool_response(part, out, "pending"))
            else:
                responses.append(tool_response(part, out))
            if source[i] == "pending":
                resolved.append(part.with_metadata(pendingOutput=None, pendingRule=None))
            else:
                interrupt = (part.metadata or {}).get("interrupt", True)
                tr = part.tool_request
                answer = responds.get((tr.name, tr.ref)) or restarts.get((tr.name, tr.ref))
                resolved.append(
                    part.with_metadata(
                        interrupt=None,
                        pendingOutput=None,
                        resolvedInterrupt=interrupt,
                        expiresAt=None,
                        onExpiry=None,
                        # the history says the call was answered by its default on expiry
                        expired=(answer.metadata or {}).get("expired") if answer is not None else None,
                    )
                )
        tool_msg = Message(
            role="tool",
            content=responses,
            metadata={"resumed": resume.metadata if resume.metadata is not None else True},
        )
        return False, tool_msg, _replace_requests(model_msg, resolved)


def _same_rule(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two rules a turn made allow the same calls (one is enough)."""
    return (a.get("tool"), a.get("scope"), a.get("input")) == (b.get("tool"), b.get("scope"), b.get("input"))


def tool_response(request: Part, done: Done, source: str | None = None) -> Part:
    """The ``toolResponse`` part answering `request` with `done`'s output; its metadata (Genkit's
    slot) names the rule that answered the call, if one did, and a stashed output's `source`."""
    tr = request.tool_request
    assert tr is not None
    metadata: dict[str, Any] = {"source": source} if source is not None else {}
    rule = done.rule
    if rule is not None:
        metadata["deniedBy" if rule.get("action") == "deny" else "approvedBy"] = {"rule": rule["rule"]}
    return Part(
        tool_response=ToolResponse(name=tr.name, ref=tr.ref, output=done.output), metadata=metadata or None
    )


def _replace_requests(msg: Message, requests: Sequence[Part]) -> Message:
    """`msg` with its tool-request parts replaced, in order, by `requests`."""
    it = iter(requests)
    content = [next(it) if p.tool_request is not None else p for p in msg.content]
    return made(type(msg), {"content": content}, like=msg)


def mark_paused(msg: Message, requests: Sequence[Part], outcomes: Mapping[int, Outcome]) -> Message:
    """The model message with paused calls marked and finished ones stashed."""
    marked: list[Part] = []
    for i, part in enumerate(requests):
        out = outcomes.get(i)
        if isinstance(out, Paused):
            marked.append(
                part.with_metadata(
                    interrupt=out.data if out.data is not None else True,
                    resolvedInterrupt=None,
                    pendingOutput=None,
                    expiresAt=out.expires_at,
                    onExpiry=out.on_expiry,
                )
            )
        elif isinstance(out, Done):
            # a None output is stashed as {} so that the key survives JSON round-trips
            stash = out.output if out.output is not None else {}
            marked.append(
                part.with_metadata(
                    pendingOutput=stash,
                    pendingRule=out.rule,
                    interrupt=None,
                    resolvedInterrupt=None,
                    expiresAt=None,
                    onExpiry=None,
                )
            )
        else:
            marked.append(part)
    return _replace_requests(msg, marked)
