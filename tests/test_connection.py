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


async def test_a_task_a_turn_left_running_streams_nothing_into_the_next_turn() -> None:
    # turn 1's handler returns and leaves a task holding its context; when that task sends a chunk
    # during turn 2 of the same connection, the caller must not read it as turn 2's
    go, sent = asyncio.Event(), asyncio.Event()
    left: list[asyncio.Task[None]] = []

    async def handler(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
        if ctx.turn_index == 0:

            async def later() -> None:
                await go.wait()
                await ctx.send_chunk({"role": "model", "content": [{"text": "from turn 1, late"}]})
                sent.set()

            left.append(asyncio.create_task(later()))
            return "one"
        go.set()
        await asyncio.wait_for(sent.wait(), 5)
        return "two"

    agent = nba.define_custom_agent("leaver", handler)
    chunks: list[nba.AgentStreamChunk] = []

    async def on_chunk(chunk: nba.AgentStreamChunk) -> None:
        chunks.append(chunk)

    inv = agent.start(on_chunk=on_chunk)
    for text in ("a", "b"):
        inv.send(nba.AgentInput(message=nba.Message(role="user", content=[nba.Part(text=text)])))
    inv.close()
    out = await inv.output()
    await left[0]
    assert out.finish_reason == "stop" and out.message is not None and out.message.text == "two"
    said = [c.model_chunk.content[0].text for c in chunks if c.model_chunk is not None]
    assert "from turn 1, late" not in said
    assert [c.turn_end is not None for c in chunks].count(True) == 2


async def test_a_connection_keeps_one_heartbeat_timer_however_many_answers_it_runs() -> None:
    # a claimed answer's turn starts a timer that begins watching its pending row a poll interval
    # later; the next turn of the connection (turns run one at a time) ends the watch of the last
    @nba.tool(name="pay")
    async def pay(amount: int, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt({"confirm": amount})
        return f"paid {amount}"

    script = [tool_call_response(("pay", "p1", {"amount": 1})), text_response("one")]
    script += [tool_call_response(("pay", "p2", {"amount": 2})), text_response("two")]
    store = nba.InMemorySessionStore()
    agent = nba.define_agent("conn", model=ScriptedModel(script), tools=[pay], store=store)
    loop = asyncio.get_running_loop()

    def watch_timers() -> int:
        live = [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
        return sum(getattr(h._callback, "__name__", "") == "begin_watch" for h in live)

    async with agent.connect() as conn:
        for n in (1, 2):
            conn.send_text(f"pay {n}")
            [paused] = [c.turn_end async for c in conn.receive() if c.turn_end]
            snap = await agent.get_snapshot(paused.snapshot_id)
            assert snap is not None and snap.state is not None
            part = nba.AgentInterrupt(snap.state.messages[-1].content[0]).restart(resumed=True)
            conn.send_resume(nba.ToolResume(restart=[part]))
            [answered] = [c.turn_end async for c in conn.receive() if c.turn_end]
            assert answered.finish_reason == "stop"
            assert watch_timers() == 1  # this answer's, not the one before it too
        await conn.output()
    assert watch_timers() == 0  # the connection ended: none
