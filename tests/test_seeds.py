"""The two seed documents' flows, translated to Python, on ScriptedModel.

Go seed: a resumable ``transferMoney`` tool, claimed with ``interrupted``,
restarted with a typed reply; over a connection, and with single ``run``
calls by session id (server-managed) and by state (client-managed).

JS seed: a ``userApproval`` interrupt answered through ``chat.resume``, the
streaming variant, and a mixed respond + restart of two interrupts.
"""

from __future__ import annotations

import pytest
from helpers import text_response, tool_call_response
from pydantic import BaseModel

import nb_agents as nba
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


# -- Go seed ------------------------------------------------------------------------------
class TransferInput(BaseModel):
    amount: float
    toAccount: str


class TransferOutput(BaseModel):
    success: bool
    transactionId: str | None = None


class ApprovalAsk(BaseModel):
    details: str


class ApprovalReply(BaseModel):
    approved: bool
    feedback: str | None = None


def banking_agent(store: nba.SessionStore | None) -> tuple[nba.Agent, nba.Tool, list[TransferInput]]:
    executed: list[TransferInput] = []

    @nba.resumable_tool(name="transferMoney", resume=ApprovalReply)
    async def transfer_money(inp: TransferInput, reply: ApprovalReply | None) -> TransferOutput:
        """Transfer money to a specified account, pausing for user approval."""
        if reply is None:
            raise nba.Interrupt(ApprovalAsk(details=f"Transfer ${inp.amount:.2f} to {inp.toAccount}"))
        if not reply.approved:
            return TransferOutput(success=False)
        executed.append(inp)
        return TransferOutput(success=True, transactionId="txn-123")

    model = ScriptedModel(
        [
            tool_call_response(("transferMoney", "t1", {"amount": 500, "toAccount": "savings"})),
            text_response("Done: transaction txn-123."),
        ]
    )
    agent = nba.define_agent(
        "bankingAgent",
        model=model,
        system="You are a banking assistant. Use transferMoney to move funds.",
        tools=[transfer_money],
        store=store,
    )
    return agent, transfer_money, executed


async def test_go_connection_claim_and_restart() -> None:
    agent, transfer_money, executed = banking_agent(nba.InMemorySessionStore())
    async with agent.connect() as conn:
        conn.send_text("Transfer $500 to my savings account.")
        interrupts: list[nba.Part] = []
        async for chunk in conn.receive():
            if chunk.model_chunk is not None:
                interrupts += chunk.model_chunk.interrupts()
        assert len(interrupts) == 1
        restart = []
        for part in interrupts:
            call = transfer_money.interrupted(part)
            assert call is not None
            ask = nba.interrupt_as(part, ApprovalAsk)
            assert ask is not None and ask.details == "Transfer $500.00 to savings"
            assert call.input == TransferInput(amount=500, toAccount="savings")
            restart.append(call.restart(ApprovalReply(approved=True)))
        assert executed == []
        conn.send_resume(nba.ToolResume(restart=restart))
        text = ""
        async for chunk in conn.receive():
            if chunk.model_chunk is not None and chunk.model_chunk.role == "model":
                text += chunk.model_chunk.text
        out = await conn.output()
    assert out.finish_reason == "stop"
    assert out.message is not None and out.message.text == "Done: transaction txn-123."
    assert executed == [TransferInput(amount=500, toAccount="savings")]


@pytest.mark.parametrize("managed", ["server", "client"])
async def test_go_single_turn_run_then_resume(managed: str) -> None:
    store = nba.InMemorySessionStore() if managed == "server" else None
    agent, transfer_money, executed = banking_agent(store)
    out = await agent.run_text("Transfer $500 to savings.")
    assert out.finish_reason == "interrupted"
    restart = []
    assert out.message is not None
    for part in out.message.content:
        call = transfer_money.interrupted(part)
        if call is not None:
            restart.append(call.restart(ApprovalReply(approved=True)))
    assert len(restart) == 1
    resume = nba.AgentInput(resume=nba.ToolResume(restart=restart))
    if managed == "server":
        assert out.snapshot_id and out.state is None
        out = await agent.run(resume, session_id=out.session_id)
    else:
        assert out.state is not None and out.snapshot_id is None
        out = await agent.run(resume, state=out.state)
    assert out.finish_reason == "stop", out.error
    assert out.message is not None and out.message.text == "Done: transaction txn-123."
    assert len(executed) == 1
    history = out.state.messages if out.state else (await agent.get_snapshot(out.snapshot_id)).state.messages  # type: ignore[union-attr]
    assert [m.role for m in history] == ["user", "model", "tool", "model"]
    assert history[2].content[0].tool_response.output == {"success": True, "transactionId": "txn-123"}  # type: ignore[union-attr]
    assert history[1].content[0].metadata == {"resolvedInterrupt": {"details": "Transfer $500.00 to savings"}}


async def test_go_deny_returns_tool_output_without_side_effect() -> None:
    agent, transfer_money, executed = banking_agent(nba.InMemorySessionStore())
    out = await agent.run_text("Transfer $500 to savings.")
    assert out.message is not None
    call = transfer_money.interrupted(out.message.content[0])
    assert call is not None
    out = await agent.run(
        nba.AgentInput(resume=nba.ToolResume(restart=[call.restart(ApprovalReply(approved=False))])),
        snapshot_id=out.snapshot_id,
    )
    assert out.finish_reason == "stop"
    assert executed == []


# -- JS seed ------------------------------------------------------------------------------
class ApprovalInput(BaseModel):
    action: str
    details: str


class ApprovalOutput(BaseModel):
    approved: bool
    feedback: str | None = None


user_approval = nba.define_interrupt(
    name="userApproval",
    description="Ask the user for approval before a sensitive action.",
    input_schema=ApprovalInput,
    output_schema=ApprovalOutput,
)


def js_agent(responses: list[dict[str, object]], stream_chunks: list[list[dict[str, object]]] | None = None):
    transfers: list[dict[str, object]] = []

    @nba.tool(name="transferMoney")
    async def transfer_money(amount: float, toAccount: str) -> dict[str, object]:
        """Transfer money to a specified account."""
        transfers.append({"amount": amount, "toAccount": toAccount})
        return {"success": True, "transactionId": f"txn-{len(transfers)}"}

    model = ScriptedModel(responses, stream_chunks=stream_chunks)
    agent = nba.define_agent(
        "bankingAgent",
        model=model,
        system="ALWAYS use the userApproval interrupt to confirm before executing transferMoney.",
        tools=[user_approval, transfer_money],
        store=nba.InMemorySessionStore(),
    )
    return agent, model, transfers


ASK = {"action": "transfer", "details": "$500 to savings"}


async def test_js_chat_send_and_respond() -> None:
    agent, model, transfers = js_agent(
        [
            tool_call_response(("userApproval", "a1", ASK)),
            tool_call_response(("transferMoney", "m1", {"amount": 500, "toAccount": "savings"})),
            text_response("Transferred $500 (txn-1)."),
        ]
    )
    chat = agent.chat()
    res = await chat.send("Transfer $500 to my savings account.")
    assert res.finish_reason == "interrupted"
    approval = next(i for i in res.interrupts if i.name == "userApproval")
    assert approval.input == ASK
    res = await chat.resume(respond=[approval.respond({"approved": True, "feedback": "Looks good"})])
    assert res.finish_reason == "stop"
    assert res.text == "Transferred $500 (txn-1)."
    assert res.interrupts == []
    assert transfers == [{"amount": 500, "toAccount": "savings"}]
    # the model saw the human's answer as the interrupt tool's output
    tool_msg = model.requests[1].messages[-1]
    assert tool_msg.role == "tool"
    assert tool_msg.content[0].tool_response.output == {"approved": True, "feedback": "Looks good"}  # type: ignore[union-attr]


async def test_js_streaming_resume() -> None:
    agent, _, _ = js_agent(
        [tool_call_response(("userApproval", "a1", ASK)), text_response("Done: approved.")],
        stream_chunks=[
            [],
            [{"role": "model", "content": [{"text": "Done: "}]}, {"content": [{"text": "approved."}]}],
        ],
    )
    chat = agent.chat()
    res = await chat.send("Transfer $500 to my savings account.")
    approval = res.interrupts[0]
    turn = chat.resume_stream(respond=[approval.respond({"approved": True})])
    streamed = ""
    kinds = []
    async for chunk in turn:
        streamed += chunk.text
        kinds.append("turnEnd" if chunk.turn_end else chunk.model_chunk.role if chunk.model_chunk else "?")
    final = await turn.response
    assert streamed == "Done: approved."
    assert kinds == ["tool", "model", "model", "turnEnd"]
    assert final.text == "Done: approved." and final.interrupts == []


async def test_js_mixed_respond_and_restart_of_two_interrupts() -> None:
    deletes: list[str] = []

    @nba.tool(name="deleteFile")
    async def delete_file(path: str, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt({"question": f"Delete {path}?"})
        deletes.append(path)
        return f"deleted {path}"

    model = ScriptedModel(
        [
            tool_call_response(("userApproval", "a", ASK), ("deleteFile", "b", {"path": "/tmp/x"})),
            text_response("Both handled."),
        ]
    )
    agent = nba.define_agent(
        "mixed", model=model, tools=[user_approval, delete_file], store=nba.InMemorySessionStore()
    )
    chat = agent.chat()
    res = await chat.send("do both")
    a, b = res.interrupts
    assert (a.name, b.name) == ("userApproval", "deleteFile")
    assert b.data == {"question": "Delete /tmp/x?"}
    res = await chat.resume(respond=[a.respond({"approved": True})], restart=[b.restart(resumed=True)])
    assert res.text == "Both handled."
    assert deletes == ["/tmp/x"]
    outputs = [p.tool_response.output for p in model.requests[1].messages[-1].content]  # type: ignore[union-attr]
    assert outputs == [{"approved": True}, "deleted /tmp/x"]


async def test_js_loop_until_no_interrupts() -> None:
    agent, _, transfers = js_agent(
        [
            tool_call_response(("userApproval", "a1", ASK)),
            tool_call_response(("userApproval", "a2", {"action": "transfer", "details": "confirm again"})),
            tool_call_response(("transferMoney", "m1", {"amount": 500, "toAccount": "savings"})),
            text_response("ok"),
        ]
    )
    chat = agent.chat()
    res = await chat.send("Transfer $500")
    rounds = 0
    while res.interrupts:
        rounds += 1
        res = await chat.resume(respond=[i.respond({"approved": True}) for i in res.interrupts])
    assert rounds == 2
    assert res.text == "ok" and len(transfers) == 1
