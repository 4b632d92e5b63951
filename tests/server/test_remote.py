"""`remote_agent` end to end: the seed's banking flow through a real uvicorn server.

The same chat API as a local agent (`Chat` over a `RemoteAgent`), server-managed on
memory and SQLite stores and client-managed, with a re-pause, signed state, the
snapshot companions, detach, and an abort that closes the connection mid-turn.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import anyio
import pytest
from helpers import text_response, tool_call_response

import nb_agents as nba
from nb_agents.errors import PermissionDeniedError
from nb_agents.remote import RemoteAgent, remote_agent
from nb_agents.testing import FunctionModel, ScriptedModel

from .live import ApprovalReply, TransferInput, banking_agent, wait_for

pytestmark = pytest.mark.anyio


def make_store(kind: str, path: Path) -> nba.SessionStore | None:
    if kind == "memory":
        return nba.InMemorySessionStore()
    if kind == "sqlite":
        return nba.SqliteSessionStore(path / "agents.db")
    return None


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
@pytest.mark.parametrize("kind", ["memory", "sqlite", "client"])
async def test_banking_flow_with_a_re_pause(serve, tmp_path: Path, kind: str, streaming: bool) -> None:
    store = make_store(kind, tmp_path)
    agent, transfer_money, executed = banking_agent(
        store, state_secret="s3cret" if kind == "client" else None
    )
    remote = remote_agent(serve(agent) + "/bankingAgent")
    assert remote.name == "bankingAgent"
    chat = remote.chat()

    res = await chat.send("Transfer $500 to my savings account.")
    assert res.finish_reason == "interrupted"
    [pause] = res.interrupts
    assert (pause.name, pause.ref, pause.input) == (
        "transferMoney",
        "t1",
        {"amount": 500, "toAccount": "savings"},
    )
    assert pause.data == {"details": "Transfer $500.00 to savings"}

    # a restart without a reply makes the resumable tool interrupt again: the turn re-pauses
    res = await chat.resume(restart=[pause.restart()])
    assert res.finish_reason == "interrupted" and executed == []
    [again] = res.interrupts
    call = transfer_money.interrupted(again.part)
    assert call is not None and call.input == TransferInput(amount=500, toAccount="savings")
    answer = call.restart(ApprovalReply(approved=True))

    if streaming:
        turn = chat.resume_stream(restart=[answer])
        streamed, kinds = "", []
        async for chunk in turn:
            streamed += chunk.text
            kinds.append(
                "turnEnd" if chunk.turn_end else chunk.model_chunk.role if chunk.model_chunk else "?"
            )
        res = await turn.response
        assert streamed == "Done: transaction txn-123."
        assert kinds == ["tool", "model", "model", "turnEnd"]
    else:
        res = await chat.resume(restart=[answer])
    assert res.finish_reason == "stop" and res.text == "Done: transaction txn-123."
    assert executed == [TransferInput(amount=500, toAccount="savings")]

    if kind == "client":
        assert res.snapshot_id is None and res.state is not None
        assert isinstance(getattr(res.state, "signature", None), str)  # round-tripped verbatim each turn
        history = res.state.messages
    else:
        assert res.state is None and chat.snapshot_id == res.snapshot_id
        snap = await remote.get_snapshot(res.snapshot_id)
        assert snap is not None and snap.status == "completed" and snap.session_id == res.session_id
        history = snap.state.messages  # type: ignore[union-attr]
    assert [m.role for m in history] == ["user", "model", "tool", "model"]
    if kind == "client":
        assert [m.role for m in chat.messages] == ["user", "model", "tool", "model"]  # from the state blob
    assert history[2].content[0].tool_response.output == {"success": True, "transactionId": "txn-123"}  # type: ignore[union-attr]


async def test_a_second_conversation_continues_from_the_session_id(serve) -> None:
    store = nba.InMemorySessionStore()
    agent, _, _ = banking_agent(store)
    remote = remote_agent(serve(agent) + "/bankingAgent")
    first = await remote.chat().send("Transfer $500")
    chat = remote.chat(session_id=first.session_id)  # sent as init.sessionId until a snapshot id is known
    [pause] = first.interrupts
    res = await chat.resume(restart=[pause.restart(resumed={"approved": True})])
    assert res.finish_reason == "stop" and res.session_id == first.session_id


async def test_tampered_state_raises_permission_denied(serve) -> None:
    agent, _, _ = banking_agent(None, state_secret="s3cret")
    other, _, _ = banking_agent(None, state_secret="another key")
    other.name = "otherBank"
    base = serve([agent, other])
    remote = remote_agent(base + "/bankingAgent")
    res = await remote.chat().send("Transfer $500")
    assert res.state is not None
    forged = res.state.model_copy(update={"messages": res.state.messages[:1]})
    for target, state in [(remote, forged), (remote_agent(base + "/otherBank"), res.state)]:
        with pytest.raises(PermissionDeniedError) as info:
            await target.chat(state=state).send("go on")
        assert info.value.status == "PERMISSION_DENIED"
        assert "is unsigned or was modified" in info.value.message


async def test_init_misuse_raises_the_matching_error(serve) -> None:
    agent, _, _ = banking_agent(nba.InMemorySessionStore())
    remote = remote_agent(serve(agent) + "/bankingAgent")
    with pytest.raises(nba.FailedPreconditionError, match="Cannot send 'state' to agent 'bankingAgent'"):
        await remote.chat(state={"messages": []}).send("hi")
    out = await remote.run_text("hi", snapshot_id="missing")  # a pre-turn failure is in-band
    assert out.finish_reason == "failed" and out.error is not None and out.error.status == "NOT_FOUND"


async def test_snapshot_companions_and_detach(serve) -> None:
    async def block(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
        await ctx.abort_signal.wait()
        return "unreachable"

    agent = nba.define_custom_agent("blocker", block, store=nba.InMemorySessionStore())
    remote = remote_agent(serve(agent) + "/blocker")
    assert await remote.get_snapshot("nope") is None
    assert await remote.abort("nope") is None
    task = await remote.chat().detach("work in the background")
    snap = await task.poll()
    assert snap is not None and snap.status == "pending"
    by_session = await remote.get_snapshot(session_id=snap.session_id)
    assert by_session is not None and by_session.snapshot_id == task.snapshot_id
    assert await task.abort() == "pending"
    final = await task.wait(interval=0.05, timeout=10)
    assert final.status == "aborted"
    assert await remote.abort(task.snapshot_id) == "aborted"  # terminal: left as it is
    with pytest.raises(nba.InvalidArgumentError):
        await remote.get_snapshot()


async def test_aborting_a_turn_closes_the_connection_and_aborts_it_on_the_server(serve) -> None:
    started, cancelled = threading.Event(), threading.Event()

    @nba.tool(name="slowTool")
    async def slow_tool(x: str) -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    store = nba.InMemorySessionStore()
    model = ScriptedModel([tool_call_response(("slowTool", "s1", {"x": "a"})), text_response("never")])
    agent = nba.define_agent("slow", model=model, tools=[slow_tool], store=store)
    chat = remote_agent(serve(agent) + "/slow").chat()
    turn = chat.send_stream("go")
    pending = asyncio.ensure_future(turn.response)
    await anyio.to_thread.run_sync(wait_for, started, "the slow tool to start")
    assert await chat.abort() == "pending"  # the turn in flight
    res = await pending
    assert res.finish_reason == "aborted"
    await anyio.to_thread.run_sync(wait_for, cancelled, "the server to cancel the tool")
    assert model.calls == 1
    assert chat.messages == []  # nothing came back: the chat is where it was


def test_sync_twins_work_from_plain_code(serve) -> None:
    store = nba.InMemorySessionStore()
    agent = nba.define_agent("echo", model=FunctionModel(lambda r: f"n={len(r.messages)}"), store=store)
    remote = remote_agent(serve(agent) + "/echo", headers=lambda: {"X-Trace": "1"})
    chat = remote.chat()
    assert chat.send_sync("one").text == "n=1"
    res = chat.send_sync("two")
    assert res.text == "n=3"
    snap = remote.get_snapshot_sync(res.snapshot_id)
    assert snap is not None and len(snap.state.messages) == 4  # type: ignore[union-attr]
    assert remote.abort_sync(res.snapshot_id) == "completed"
    out = remote.run_text_sync("three", snapshot_id=res.snapshot_id)
    assert out.message is not None and out.message.text == "n=5"
    assert isinstance(remote, RemoteAgent)
