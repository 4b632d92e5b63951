"""`agent.connect()`: many turns over one connection; foreground abort."""

from __future__ import annotations

import asyncio

import pytest
from helpers import text_response, tool_call_response

import nb_agents as nba
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


async def test_many_turns_over_one_connection() -> None:
    store = nba.InMemorySessionStore()
    agent = nba.define_agent(
        "conn", model=ScriptedModel([text_response("one"), text_response("two")]), store=store
    )
    async with agent.connect() as conn:
        conn.send_text("first")
        ends = [c.turn_end async for c in conn.receive() if c.turn_end]
        assert len(ends) == 1 and ends[0].finish_reason == "stop" and ends[0].snapshot_id
        conn.send_text("second")
        second = [c async for c in conn.receive()]
        out = await conn.output()
    assert second[-1].turn_end is not None
    assert out.message is not None and out.message.text == "two"
    snap = await agent.get_snapshot(out.snapshot_id)
    assert snap is not None and snap.parent_id == ends[0].snapshot_id
    assert [m.text for m in snap.state.messages] == ["first", "one", "second", "two"]  # type: ignore[union-attr]
    with pytest.raises(nba.FailedPreconditionError):
        conn.send_text("too late")


async def test_inputs_queued_at_once_run_in_order() -> None:
    agent = nba.define_agent("conn", model=ScriptedModel([text_response("r1"), text_response("r2")]))
    async with agent.connect() as conn:
        conn.send_text("a")
        conn.send_text("b")
        out = await conn.output()
    assert [m.text for m in out.state.messages] == ["a", "r1", "b", "r2"]  # type: ignore[union-attr]


async def test_a_failed_turn_ends_the_connection() -> None:
    agent = nba.define_agent("conn", model=ScriptedModel([]))  # the model has nothing to say: it fails
    async with agent.connect() as conn:
        conn.send_text("a")
        conn.send_text("b")
        out = await conn.output()
    assert out.finish_reason == "failed" and out.error is not None
    assert "has no response for call #1" in out.error.message


async def test_foreground_abort_of_a_running_turn() -> None:
    started = asyncio.Event()

    @nba.tool(name="slow")
    async def slow() -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    store = nba.InMemorySessionStore()
    agent = nba.define_agent(
        "slowpoke",
        model=ScriptedModel([text_response("hi"), tool_call_response(("slow", "s1", {}))]),
        tools=[slow],
        store=store,
    )
    chat = agent.chat()
    first = await chat.send("hi")
    turn = chat.send_stream("do the slow thing")
    response = turn.response
    await asyncio.wait_for(started.wait(), 5)
    turn.abort()
    res = await asyncio.wait_for(response, 5)
    assert res.finish_reason == "aborted"
    assert res.snapshot_id == first.snapshot_id  # nothing was written for the aborted turn
    assert chat.snapshot_id == first.snapshot_id
    latest = await agent.get_snapshot(session_id=first.session_id)
    assert latest is not None and latest.snapshot_id == first.snapshot_id


async def test_a_plain_event_as_abort_signal_leaves_no_task_behind() -> None:
    agent = nba.define_agent("plain", model=ScriptedModel([text_response("hi")]))
    before = len(asyncio.all_tasks())
    inv = agent.start(abort_signal=asyncio.Event())  # never set
    inv.send(nba.AgentInput(message=nba.Message(role="user", content=[nba.Part(text="x")])))
    out = await inv.output()
    await asyncio.sleep(0)  # let cancelled waiters finish
    assert out.finish_reason == "stop"
    assert len(asyncio.all_tasks()) == before
