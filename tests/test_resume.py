"""Resume rules: validation errors, what a rejected resume leaves, re-pauses.

Every rejection is a graceful ``failed`` output with the Genkit status and
message, and consumes nothing: the same interrupt is answered again after it.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import text_response, tool_call_response
from pydantic import BaseModel

import nb_agents as nba
from nb_agents.interrupts import interrupt_digest
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class Ask(BaseModel):
    question: str


class Answer(BaseModel):
    answer: str


ask_user = nba.define_interrupt(name="askUser", input_schema=Ask, output_schema=Answer)


class Op(BaseModel):
    action: str


class OpResult(BaseModel):
    result: str


def make_agent(
    responses: list[dict[str, Any]], *, store: bool = True
) -> tuple[nba.Agent, ScriptedModel, list[str]]:
    ran: list[str] = []

    @nba.tool(name="runOp")
    async def run_op(op: Op, ctx: nba.ToolContext) -> OpResult:
        if not ctx.resumed:
            ctx.interrupt({"confirm": op.action})
        ran.append(op.action)
        return OpResult(result=f"did {op.action}")

    @nba.tool(name="lookup")
    async def lookup(q: str) -> dict[str, int]:
        ran.append(f"lookup:{q}")
        return {"balance": 900}

    model = ScriptedModel(responses)
    agent = nba.define_agent(
        "resumer",
        model=model,
        tools=[ask_user, run_op, lookup],
        store=nba.InMemorySessionStore() if store else None,
    )
    return agent, model, ran


async def paused(agent: nba.Agent, text: str = "go") -> nba.AgentOutput:
    out = await agent.run_text(text)
    assert out.finish_reason == "interrupted", out.error
    return out


def resume(**kw: list[nba.Part]) -> nba.AgentInput:
    return nba.AgentInput(resume=nba.ToolResume(**kw))


async def again(agent: nba.Agent, out: nba.AgentOutput, inp: nba.AgentInput) -> nba.AgentOutput:
    if out.snapshot_id:
        return await agent.run(inp, snapshot_id=out.snapshot_id)
    return await agent.run(inp, state=out.state)


def interrupt_parts(out: nba.AgentOutput) -> list[nba.Part]:
    return out.interrupts()


REJECTIONS: list[tuple[str, str, str]] = [
    ("forged_restart_input", "INVALID_ARGUMENT", "has modified inputs that do not match the original"),
    (
        "unknown_ref",
        "INVALID_ARGUMENT",
        "references tool 'runOp' (ref: nope) which was not found in session history",
    ),
    ("unknown_tool", "INVALID_ARGUMENT", "references tool 'fakeTool' (ref: fake) which was not found"),
    ("unanswered", "INVALID_ARGUMENT", "Unresolved tool request 'askUser#a1' was not handled"),
    (
        "bad_output",
        "INVALID_ARGUMENT",
        "resume.respond for tool 'askUser' (ref: a1) output validation failed",
    ),
    ("answered_twice", "INVALID_ARGUMENT", "more than once"),
    ("bad_replaced_input", "INVALID_ARGUMENT", "replaced input that fails the tool's input schema"),
    ("forged_replaced_input", "INVALID_ARGUMENT", "replacedInput that does not match"),
]


def bad_resume(kind: str, out: nba.AgentOutput) -> nba.AgentInput:
    ask, op = interrupt_parts(out)
    ok_ask = nba.AgentInterrupt(ask).respond({"answer": "yes"})
    ok_op = nba.AgentInterrupt(op).restart(resumed=True)
    if kind == "forged_restart_input":
        forged = ok_op.model_copy(
            update={"tool_request": nba.ToolRequest(name="runOp", ref="r1", input={"action": "rm -rf"})}
        )
        return resume(respond=[ok_ask], restart=[forged])
    if kind == "unknown_ref":
        part = nba.Part(tool_request=nba.ToolRequest(name="runOp", ref="nope", input={"action": "safe"}))
        return resume(respond=[ok_ask], restart=[ok_op, part])
    if kind == "unknown_tool":
        fake = nba.Part(tool_response=nba.ToolResponse(name="fakeTool", ref="fake", output={"answer": "x"}))
        return resume(respond=[ok_ask, fake], restart=[ok_op])
    if kind == "unanswered":
        return resume(restart=[ok_op])
    if kind == "bad_output":
        return resume(respond=[nba.AgentInterrupt(ask).respond({"nope": 1})], restart=[ok_op])
    if kind == "answered_twice":
        return resume(respond=[ok_ask, ok_ask], restart=[ok_op])
    if kind == "bad_replaced_input":
        return resume(
            respond=[ok_ask], restart=[nba.AgentInterrupt(op).restart(True, replace_input={"action": 3})]
        )
    if kind == "forged_replaced_input":
        part = nba.AgentInterrupt(op).restart(True, replace_input={"action": "other"})
        assert part.metadata is not None
        part.metadata["replacedInput"] = {"action": "not what the model asked"}
        return resume(respond=[ok_ask], restart=[part])
    raise AssertionError(kind)


TWO = [
    tool_call_response(("askUser", "a1", {"question": "ok?"}), ("runOp", "r1", {"action": "safe"})),
    text_response("done"),
]


@pytest.mark.parametrize("store", [True, False], ids=["server", "client"])
@pytest.mark.parametrize(("kind", "status", "message"), REJECTIONS, ids=[r[0] for r in REJECTIONS])
async def test_rejected_resume_is_graceful_and_consumes_nothing(
    kind: str, status: str, message: str, store: bool
) -> None:
    agent, model, ran = make_agent(list(TWO), store=store)
    out = await paused(agent)
    bad = await again(agent, out, bad_resume(kind, out))
    assert bad.finish_reason == "failed"
    assert bad.error is not None and bad.error.status == status
    assert message in bad.error.message
    assert ran == [] and model.calls == 1
    # the pointer still names the paused turn: it can be answered again
    if store:
        assert bad.snapshot_id == out.snapshot_id
    else:
        assert bad.state is not None and bad.state.messages == out.state.messages  # type: ignore[union-attr]
    ask, op = interrupt_parts(out)
    good = await again(
        agent,
        bad,
        resume(
            respond=[nba.AgentInterrupt(ask).respond({"answer": "yes"})],
            restart=[nba.AgentInterrupt(op).restart(True)],
        ),
    )
    assert good.finish_reason == "stop", good.error
    assert ran == ["safe"]


async def test_chat_rejection_raises_agent_error_and_chat_stays_answerable() -> None:
    agent, _, ran = make_agent(list(TWO))
    chat = agent.chat()
    res = await chat.send("go")
    ask, op = res.interrupts
    with pytest.raises(nba.AgentError) as info:
        await chat.resume(respond=[ask.respond({"wrong": True})], restart=[op.restart(resumed=True)])
    assert info.value.status == "INVALID_ARGUMENT"
    assert "output validation failed" in info.value.message
    assert chat.snapshot_id == res.snapshot_id
    res = await chat.resume(respond=[ask.respond({"answer": "yes"})], restart=[op.restart(resumed=True)])
    assert res.text == "done" and ran == ["safe"]


async def test_part_from_an_earlier_turn_gets_its_own_error() -> None:
    agent, _, _ = make_agent(
        [
            tool_call_response(("askUser", "a1", {"question": "first?"})),
            tool_call_response(("askUser", "a2", {"question": "second?"})),
        ]
    )
    first = await paused(agent)
    old = first.interrupts()[0]
    second = await again(agent, first, resume(respond=[nba.AgentInterrupt(old).respond({"answer": "1"})]))
    assert second.finish_reason == "interrupted"
    stale = await again(agent, second, resume(respond=[nba.AgentInterrupt(old).respond({"answer": "again"})]))
    assert stale.finish_reason == "failed"
    assert stale.error is not None and stale.error.status == "INVALID_ARGUMENT"
    assert (
        'references tool "askUser" (ref: a1) from an earlier turn which is no longer pending'
        in stale.error.message
    )


async def test_resume_without_a_paused_turn_is_a_failed_precondition() -> None:
    agent, _, _ = make_agent([text_response("hello")])
    out = await agent.run_text("hi")
    part = nba.Part(tool_response=nba.ToolResponse(name="askUser", ref="a1", output={"answer": "x"}))
    bad = await agent.run(resume(respond=[part]), snapshot_id=out.snapshot_id)
    assert bad.finish_reason == "failed" and bad.error is not None
    assert bad.error.status == "FAILED_PRECONDITION"
    assert "Cannot 'resume' generation unless the previous message is a model message" in bad.error.message


async def test_input_needs_a_message_or_a_resume() -> None:
    agent, _, _ = make_agent([])
    out = await agent.run(nba.AgentInput())
    assert out.finish_reason == "failed" and out.error is not None
    assert out.error.status == "INVALID_ARGUMENT"
    assert out.error.message == "agent input message or resume is required"


async def test_finished_sibling_is_stashed_as_pending_output_and_never_rerun() -> None:
    agent, model, ran = make_agent(
        [
            tool_call_response(("lookup", "l1", {"q": "balance"}), ("askUser", "a1", {"question": "ok?"})),
            text_response("ok"),
        ]
    )
    out = await paused(agent)
    assert ran == ["lookup:balance"]
    assert out.message is not None
    lookup_part, ask_part = out.message.tool_requests
    assert lookup_part.metadata == {"pendingOutput": {"balance": 900}}
    assert ask_part.metadata == {"interrupt": True}
    done = await again(agent, out, resume(respond=[nba.AgentInterrupt(ask_part).respond({"answer": "yes"})]))
    assert done.finish_reason == "stop"
    assert ran == ["lookup:balance"]  # not run again
    tool_msg = model.requests[1].messages[-1]
    assert tool_msg.metadata == {"resumed": True}
    assert [p.metadata for p in tool_msg.content] == [
        {"source": "pending"},
        {"interruptDigest": interrupt_digest(ask_part)},  # the respond as built, bound to its pause
    ]
    assert model.requests[1].messages[-2].content[0].metadata in (None, {})


async def test_restarted_tool_that_interrupts_again_repauses() -> None:
    agent, model, ran = make_agent(
        [tool_call_response(("runOp", "r1", {"action": "x"})), text_response("done")]
    )
    out = await paused(agent)
    op = nba.AgentInterrupt(out.interrupts()[0])
    again_out = await again(agent, out, resume(restart=[op.restart()]))  # no `resumed`: the tool asks again
    assert again_out.finish_reason == "interrupted"
    assert model.calls == 1 and ran == []
    assert again_out.interrupts()[0].metadata == {"interrupt": {"confirm": "x"}}
    final = await again(
        agent, again_out, resume(restart=[nba.AgentInterrupt(again_out.interrupts()[0]).restart(True)])
    )
    assert final.finish_reason == "stop" and ran == ["x"]


async def test_restarting_a_pure_interrupt_repauses_and_respond_keeps_other_answers() -> None:
    agent, model, ran = make_agent(list(TWO))
    out = await paused(agent)
    ask, op = (nba.AgentInterrupt(p) for p in out.interrupts())
    second = await again(agent, out, resume(restart=[ask.restart(), op.restart(resumed=True)]))
    assert second.finish_reason == "interrupted"
    assert ran == ["safe"]  # the restarted op ran once; its output is stashed
    parts = second.message.tool_requests  # type: ignore[union-attr]
    assert parts[0].is_interrupt and parts[1].metadata == {"pendingOutput": {"result": "did safe"}}
    final = await again(
        agent, second, resume(respond=[nba.AgentInterrupt(parts[0]).respond({"answer": "y"})])
    )
    assert final.finish_reason == "stop"
    assert ran == ["safe"]


async def test_restart_with_input_runs_on_the_new_input() -> None:
    class Amount(BaseModel):
        amount: int

    class Reply(BaseModel):
        approved: bool

    seen: list[tuple[int, Any]] = []

    @nba.resumable_tool(name="pay", resume=Reply)
    async def pay(inp: Amount, reply: Reply | None, ctx: nba.ToolContext) -> str:
        if reply is None:
            raise nba.Interrupt({"amount": inp.amount})
        seen.append((inp.amount, ctx.original_input))
        return f"paid {inp.amount}"

    model = ScriptedModel([tool_call_response(("pay", "p1", {"amount": 500})), text_response("ok")])
    agent = nba.define_agent("payer", model=model, tools=[pay], store=nba.InMemorySessionStore())
    out = await agent.run_text("pay 500")
    call = pay.interrupted(out.interrupts()[0])
    assert call is not None
    done = await agent.run(
        resume(restart=[call.restart_with_input(Amount(amount=300), Reply(approved=True))]),
        snapshot_id=out.snapshot_id,
    )
    assert done.finish_reason == "stop", done.error
    assert seen == [(300, {"amount": 500})]
    request_part = model.requests[1].messages[-2].content[0]
    assert request_part.tool_request.input == {"amount": 300}  # type: ignore[union-attr]
    assert request_part.metadata == {"replacedInput": {"amount": 500}, "resolvedInterrupt": {"amount": 500}}
    # a resumed value that does not fit the resume type is rejected up front
    out2 = await agent.run_text("pay again")
    assert out2.finish_reason == "failed"  # the model script is exhausted: a failed turn, nothing paid
    assert len(seen) == 1


async def test_resumed_value_is_validated_against_the_resume_type() -> None:
    class Reply(BaseModel):
        approved: bool

    @nba.resumable_tool(name="act", resume=Reply)
    async def act(what: str, reply: Reply | None) -> str:
        if reply is None:
            raise nba.Interrupt()
        return "acted"

    agent = nba.define_agent(
        "actor",
        model=ScriptedModel([tool_call_response(("act", "x", {"what": "it"})), text_response("ok")]),
        tools=[act],
        store=nba.InMemorySessionStore(),
    )
    out = await agent.run_text("act")
    call = act.interrupted(out.interrupts()[0])
    assert call is not None
    bad = await agent.run(resume(restart=[call.restart({"approved": "maybe"})]), snapshot_id=out.snapshot_id)
    assert bad.finish_reason == "failed" and bad.error is not None
    assert bad.error.status == "INVALID_ARGUMENT" and "resume schema" in bad.error.message
    good = await agent.run(resume(restart=[call.restart(Reply(approved=True))]), snapshot_id=out.snapshot_id)
    assert good.finish_reason == "stop"


async def test_resume_metadata_lands_on_the_tool_message() -> None:
    agent, model, _ = make_agent(
        [tool_call_response(("askUser", "a1", {"question": "?"})), text_response("ok")]
    )
    chat = agent.chat()
    res = await chat.send("go")
    await chat.resume(respond=[res.interrupts[0].respond({"answer": "y"})], metadata={"answeredBy": "ana"})
    assert model.requests[1].messages[-1].metadata == {"resumed": {"answeredBy": "ana"}}
