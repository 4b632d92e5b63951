"""Sub-agents: an agent used as a tool of another (`Agent.as_tool`).

The tool runs one turn of the child agent on the task the parent's model
gives it, in a session of the child's own whose id is derived from the
parent's (``<parent session>~<child>-<call key>``; its first message records
the parent's session, tool and call ref), and returns the child's reply as
the call's output. The child is an agent like any other: its own model, tools,
`ToolApproval`, rules, deadlines and audit, its own decision step for its own
tools, its own store.

When the child pauses, the tool pauses the parent's call with the child's
pause as its pause data (`nb_agents.nested`), so the parent pauses too and its
response lists the child's waiting calls, each with ``path``. An answer given
at the top is a restart of the parent's call carrying the answer to the child
(a *nested answer*): the restarted tool resumes the child's paused snapshot
with it, exactly once by the child's own claim (the parent's claim makes the
top answer exactly-once too), and returns the child's reply, or pauses again
with the child's next pause. Nothing a model writes reaches the child as an
answer: the parent model's call carries only the task text (metadata on its
call is stripped by the parent's engine), and the child's model is one more
untrusted model, whose calls the child's engine strips and decides.

Sub-agent pauses that were settled elsewhere (the child's own ``pending()``,
its deadline's default) are caught up with: the tool goes on from the child's
latest turn. A parent's fork resumes a fork of the child, so each branch runs
the child's tools once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import FailedPreconditionError, InvalidArgumentError, error_for_status
from .interrupts import Interrupt
from .nested import SUBAGENT, check_answer, nested_answer, sub_pause
from .tools import Tool, ToolContext, ToolFail
from .types import AgentInit, AgentInput, AgentOutput, CallOptions, Message, Part, SessionState, ToolResume

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["SubAgentInput", "SubAgentTool", "subagent_tool"]

ABORT_GRACE = 10.0
"""Seconds an aborted parent waits for its sub-agent's turn to record its own abort."""


class SubAgentInput(BaseModel):
    """What the parent's model gives a sub-agent: the task, in words."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(
        description="What to ask of the agent, in words: the question or the job, with the details."
    )


class SubAgentTool(Tool):
    """An agent as a tool of another (build it with `Agent.as_tool`).

    Attributes:
        agent: The sub-agent.
    """

    def __init__(self, agent: Agent, *, name: str, description: str) -> None:
        super().__init__(
            None,
            name=name,
            description=description,
            input_model=SubAgentInput,
            unpack_input=False,
            output_type=str,
        )
        self.agent = agent

    @property
    def subagent_tools(self) -> Mapping[str, Tool]:
        """The sub-agent's tools by name (how a form finds the tool a nested pause waits on)."""
        return self.agent.tools

    # -- checks before anything is claimed -----------------------------------------------------
    def approval_needed(self, resumed: Any = None) -> bool | None:
        # An answer to the child's pause: the call got past the parent's gate when it started (the
        # pause it answers is the child's, which exists only because the call ran), and
        # `check_resume` refuses a nested answer to any other pause. The child decides its own calls.
        return False if nested_answer(resumed) is not None else self.needs_approval

    def check_resume(self, raw: Any, pause: dict[str, Any] | None = None) -> None:
        """A restart's ``resumed``: a nested answer fits the sub-agent pause it answers, and a
        sub-agent pause is answered only so (a plain restart would start the child over)."""
        sub = pause.get(SUBAGENT) if isinstance(pause, dict) else None
        answer = nested_answer(raw)
        if answer is None:
            if isinstance(sub, dict):
                raise InvalidArgumentError(
                    f"the call of '{self.name}' waits on its sub-agent's questions: answer those "
                    "(res.interrupts lists them, each with its path), not the call itself"
                )
            return
        if not isinstance(sub, dict):
            raise InvalidArgumentError(
                f"the call of '{self.name}' is not waiting on its sub-agent: a sub-agent's answer "
                "does not fit it (approve or deny the call itself)"
            )
        check_answer(answer, sub, self.agent.tools)

    # -- running -------------------------------------------------------------------------------
    async def invoke(self, raw_input: Any, ctx: ToolContext) -> Any:
        answer = nested_answer(ctx.resumed)
        if answer is not None:
            return await self._resume(answer, ctx)
        try:
            task = SubAgentInput.model_validate(raw_input if raw_input is not None else {}).task
        except ValidationError as exc:
            raise ToolFail(f"Invalid input for tool '{self.name}': {exc}") from exc
        return await self._start(task, ctx)

    def _options(self, ctx: ToolContext) -> CallOptions:
        # the person (or service) the parent's turn runs for: the child's sessions are theirs
        return CallOptions(context=ctx.context) if ctx.context else CallOptions()

    def _session_id(self, ctx: ToolContext) -> str:
        """The child session of this call: derived from the parent's session and the call's key."""
        parent = str(getattr(ctx.session, "session_id", "") or "")
        baseless = hashlib.sha256(f"\n{ctx.name}\n{ctx.ref or ''}".encode()).hexdigest()[:32]
        # without a parent store the key is the same for every call with this ref: a fresh one
        key = (
            ctx.idempotency_key
            if ctx.idempotency_key and ctx.idempotency_key != baseless
            else uuid.uuid4().hex
        )
        return f"{parent}~{self.agent.name}-{key[:16]}"

    async def _start(self, task: str, ctx: ToolContext) -> Any:
        store = self.agent.store
        sid = self._session_id(ctx)
        if store is not None:
            # the same call run again (a takeover of the parent's answer): go on from what it did
            leaf = await store.get_latest(sid)
            if leaf is not None:
                caught = self._settled(leaf.snapshot_id, leaf.finish_reason, leaf.state, sid, ctx)
                if caught is not None:
                    return caught
        link = {"parentSessionId": getattr(ctx.session, "session_id", None), "tool": ctx.name, "ref": ctx.ref}
        msg = Message(role="user", content=[Part(text=task)], metadata={SUBAGENT: link})
        init = AgentInit(session_id=sid) if store is not None else AgentInit()
        out = await self._run(AgentInput(message=msg), init, ctx)
        return self._outcome(out, sid, ctx)

    async def _resume(self, answer: dict[str, Any], ctx: ToolContext) -> Any:
        sub = _own_pause(ctx)
        if sub is None:
            raise FailedPreconditionError(
                f"the call of '{self.name}' has no sub-agent pause to answer in this session"
            )
        resume = ToolResume(
            respond=[Part.model_validate(p) for p in answer.get("respond") or []],
            restart=[Part.model_validate(p) for p in answer.get("restart") or []],
            metadata={"answeredBy": answer["answeredBy"]}
            if isinstance(answer.get("answeredBy"), str)
            else None,
        )
        inp = AgentInput(resume=resume, partial=True if answer.get("partial") is True else None)
        sid = str(sub.get("sessionId") or "")
        snapshot_id = sub.get("snapshotId")
        if self.agent.store is None:
            init = AgentInit(state=SessionState.model_validate(sub.get("state") or {}))
        else:
            if not isinstance(snapshot_id, str):
                raise FailedPreconditionError(f"the sub-agent pause of '{self.name}' names no snapshot")
            here = getattr(ctx.session, "session_id", None)
            if sub.get("parentSessionId") not in (None, here):
                # the parent's pause was forked: its answer goes to a fork of the child's pause
                fork = await self.agent.fork(snapshot_id, key=str(here), context=ctx.context or None)
                snapshot_id, sid = fork.snapshot_id, str(fork.session_id)
            init = AgentInit(snapshot_id=snapshot_id)
        out = await self._run(inp, init, ctx)
        if out.finish_reason == "failed" and self.agent.store is not None and isinstance(snapshot_id, str):
            leaf = await self.agent.get_snapshot(session_id=sid, context=ctx.context or None)
            if leaf is not None and leaf.snapshot_id != snapshot_id and leaf.status in (None, "completed"):
                caught = self._settled(leaf.snapshot_id, leaf.finish_reason, leaf.state, sid, ctx)
                if caught is not None:
                    return caught  # answered elsewhere, or its deadline's default applied: go on from there
        return self._outcome(out, sid, ctx)

    async def _run(self, inp: AgentInput, init: AgentInit, ctx: ToolContext) -> AgentOutput:
        """One turn of the child; if the parent's turn is aborted meanwhile, the child's is aborted
        too (and records so: an answer that started its tools is then never run again unasked)."""
        abort = asyncio.Event()
        options = self._options(ctx)
        job = asyncio.ensure_future(self.agent.invoke(inp, init, options=options, abort_signal=abort))
        try:
            return await asyncio.shield(job)
        except asyncio.CancelledError:
            abort.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(job), ABORT_GRACE)
            raise

    def _settled(
        self, snapshot_id: str, finish: str | None, state: SessionState | None, sid: str, ctx: ToolContext
    ) -> Any:
        """The outcome of a child turn read from the store, or None if it is not a settled one."""
        if state is None or not state.messages or finish in (None, "failed", "aborted", "detached"):
            return None
        out = AgentOutput(
            session_id=sid, snapshot_id=snapshot_id, message=state.messages[-1], finish_reason=finish
        )  # type: ignore[arg-type]
        return self._outcome(out, sid, ctx)

    def _outcome(self, out: AgentOutput, sid: str, ctx: ToolContext) -> Any:
        """The child's reply as the call's output; its pause as the call's; its failure as the call's."""
        if out.finish_reason == "interrupted":
            raise Interrupt(self._pause(out, sid, ctx))
        if out.finish_reason in ("failed", "aborted"):
            err = out.error
            said = err.message if err is not None else f"the turn ended '{out.finish_reason}'"
            details = err.details if err is not None and isinstance(err.details, dict) else {}
            failure = error_for_status(
                err.status if err is not None else "ABORTED",
                f"sub-agent '{self.agent.name}' failed: {said}",
                details={**details, "subagent": self.agent.name, "sessionId": sid},
            )
            # refused before any of its tools started: nothing was acted on, the answer may be given again
            failure.ran_nothing = not details.get("retry") and out.finish_reason == "failed"
            raise failure
        message = out.message
        return message.text if message is not None else ""

    def _pause(self, out: AgentOutput, sid: str, ctx: ToolContext) -> dict[str, Any]:
        """The pause data of the parent's call: the child's pause (see `nb_agents.nested`)."""
        sub: dict[str, Any] = {
            "agent": self.agent.name,
            "sessionId": out.session_id or sid,
            "parentSessionId": getattr(ctx.session, "session_id", None),
            "interrupts": [p.to_wire() for p in out.interrupts()],
        }
        if out.snapshot_id is not None:
            sub["snapshotId"] = out.snapshot_id
        if out.state is not None:
            sub["state"] = out.state.to_wire()
        asks = ", ".join(sorted({str(p.get("toolRequest", {}).get("name")) for p in sub["interrupts"]}))
        return {"message": f"Sub-agent '{self.agent.name}' waits for an answer ({asks}).", SUBAGENT: sub}


def _own_pause(ctx: ToolContext) -> dict[str, Any] | None:
    """The sub-agent pause of the call being answered, as the parent's session stored it.

    Read from the paused model message (the last one while an answer runs), never
    from the answer: where the child's pause lives is nb_agents' own record.
    """
    messages = getattr(ctx.session, "messages", None) or []
    last = messages[-1] if messages else None
    if last is None or last.role != "model":
        return None
    for part in last.tool_requests:
        tr = part.tool_request
        if tr is not None and tr.name == ctx.name and tr.ref == ctx.ref and part.is_interrupt:
            return sub_pause(part)
    return None


def subagent_tool(agent: Agent, *, name: str | None = None, description: str | None = None) -> SubAgentTool:
    """`agent` as a tool of another (what `Agent.as_tool` returns)."""
    tool_name = name if name is not None else agent.name
    if not isinstance(tool_name, str) or not tool_name:
        raise InvalidArgumentError("a sub-agent tool needs a name")
    about = description if description is not None else agent.description
    if not about:
        about = f"Ask the '{agent.name}' agent to do a task; it answers in words."
    return SubAgentTool(agent, name=tool_name, description=about)
