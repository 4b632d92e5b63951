"""The sync twins: the same results as the async verbs, from plain code and
from inside an already running event loop (as in a Jupyter cell)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading

import pytest
from helpers import text_response, tool_call_response

import nb_agents as nba
from nb_agents.testing import ScriptedModel


def approval_agent(store: bool = True) -> tuple[nba.Agent, list[str]]:
    done: list[str] = []

    @nba.tool(name="wire")
    def wire(amount: int, ctx: nba.ToolContext) -> str:  # a sync tool: runs in a worker thread
        if not ctx.resumed:
            ctx.interrupt({"amount": amount})
        done.append(threading.current_thread().name)
        return f"wired {amount}"

    model = ScriptedModel(
        [tool_call_response(("wire", "w1", {"amount": 5})), text_response("wired!")],
        stream_chunks=[[], [{"content": [{"text": "wi"}]}, {"content": [{"text": "red!"}]}]],
    )
    agent = nba.define_agent(
        "sync", model=model, tools=[wire], store=nba.InMemorySessionStore() if store else None
    )
    return agent, done


def run_flow_sync(agent: nba.Agent) -> tuple[str, str, list[str]]:
    chat = agent.chat()
    res = chat.send_sync("wire 5")
    first = res.finish_reason
    turn = chat.resume_stream_sync(restart=[res.interrupts[0].restart(resumed=True)])
    texts = [c.text for c in turn]
    return first, turn.response.text, texts


async def run_flow_async(agent: nba.Agent) -> tuple[str, str, list[str]]:
    chat = agent.chat()
    res = await chat.send("wire 5")
    first = res.finish_reason
    turn = chat.resume_stream(restart=[res.interrupts[0].restart(resumed=True)])
    texts = [c.text async for c in turn]
    return first, (await turn.response).text, texts


@pytest.mark.parametrize("store", [True, False])
def test_sync_and_async_give_the_same_results(store: bool) -> None:
    sync_agent, sync_done = approval_agent(store)
    async_agent, async_done = approval_agent(store)
    assert run_flow_sync(sync_agent) == asyncio.run(run_flow_async(async_agent))
    assert run_flow_sync(approval_agent(store)[0])[0] == "interrupted"
    assert len(sync_done) == len(async_done) == 1


def test_send_sync_inside_a_running_event_loop() -> None:
    agent, done = approval_agent()

    async def cell() -> tuple[str, str]:
        # what a notebook cell does: sync calls while the kernel's loop runs
        assert asyncio.get_running_loop().is_running()
        chat = agent.chat()
        res = chat.send_sync("wire 5")
        res2 = chat.resume_sync(restart=[res.interrupts[0].restart(resumed=True)])
        return res.finish_reason, res2.text

    assert asyncio.run(cell()) == ("interrupted", "wired!")
    assert len(done) == 1


def test_run_sync_and_snapshot_twins() -> None:
    agent, _ = approval_agent()
    out = agent.run_text_sync("wire 5")
    assert out.finish_reason == "interrupted"
    snap = agent.get_snapshot_sync(out.snapshot_id)
    assert snap is not None and snap.status == "completed" and snap.finish_reason == "interrupted"
    assert [p.session_id for p in agent.pending_sync()] == [out.session_id]
    assert agent.abort_sync(out.snapshot_id) == "completed"  # type: ignore[arg-type]


def test_sync_error_surfaces_as_the_same_exception() -> None:
    agent, _ = approval_agent()
    chat = agent.chat()
    res = chat.send_sync("wire 5")
    with pytest.raises(nba.AgentError) as info:
        chat.resume_sync(respond=[res.interrupts[0].respond("x"), res.interrupts[0].respond("y")])
    assert info.value.status == "INVALID_ARGUMENT"


def test_connection_from_sync_code() -> None:
    agent, done = approval_agent()
    with agent.connect() as conn:
        conn.send_text("wire 5")
        chunks = list(conn.receive_sync())
        interrupts = [p for c in chunks if c.model_chunk for p in c.model_chunk.interrupts()]
        assert chunks[-1].turn_end is not None and chunks[-1].turn_end.finish_reason == "interrupted"
        conn.send_resume(nba.ToolResume(restart=[nba.AgentInterrupt(interrupts[0]).restart(resumed=True)]))
        out = conn.output_sync()
    assert out.finish_reason == "stop" and out.message is not None and out.message.text == "wired!"
    assert len(done) == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_runs_twins_on_a_private_loop_of_its_own() -> None:
    """``multiprocessing`` forks on Linux: a worker of a process that already used a twin has a
    copy of the private loop that says it runs, and no thread running it."""
    agent, _ = approval_agent(store=False)
    assert agent.chat().send_sync("wire 5").finish_reason == "interrupted"  # the parent's loop runs
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            signal.alarm(15)  # a hang is a failure, not a stuck suite
            child, _ = approval_agent(store=False)
            res = child.chat().send_sync("wire 5")
            code = 0 if res.finish_reason == "interrupted" else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # -SIGALRM: it waited for the parent's loop
    again, _ = approval_agent(store=False)
    assert again.chat().send_sync("wire 5").finish_reason == "interrupted"  # the parent's loop runs on
