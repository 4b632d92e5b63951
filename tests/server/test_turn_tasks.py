"""A served turn leaves no task behind once its answer is sent (a long-running server must not grow).

Driven in the test's own event loop through ``httpx.ASGITransport``, so every task
the app starts is visible to ``asyncio.all_tasks()``.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import httpx
import pytest

import nb_agents as nba
from nb_agents.server import create_app
from nb_agents.testing import FunctionModel

pytestmark = pytest.mark.anyio

SSE = {"Accept": "text/event-stream"}


def approval_agent() -> tuple[nba.Agent, list[str]]:
    """``transfer`` needs approval; each run appends the cycle to `ran`."""
    ran: list[str] = []

    @nba.tool(name="transfer")
    async def transfer(cycle: str) -> str:
        """Move money."""
        ran.append(cycle)
        return cycle

    def reply(req: nba.GenerateRequest) -> dict[str, Any] | str:
        last = req.messages[-1]
        if last.role == "tool":
            return "done"
        call = {"name": "transfer", "ref": "t1", "input": {"cycle": last.text}}
        return {"message": {"role": "model", "content": [{"toolRequest": call}]}, "finishReason": "stop"}

    agent = nba.define_agent(
        "bench",
        model=FunctionModel(reply),
        tools=[transfer],
        store=nba.InMemorySessionStore(),
        use=[nba.middleware.ToolApproval()],
    )
    return agent, ran


async def cycle(client: httpx.AsyncClient, name: str, headers: dict[str, str]) -> dict[str, Any]:
    """One approval cycle over the wire, its resume sent twice; the final result."""

    async def post(body: dict[str, Any]) -> dict[str, Any]:
        res = await client.post("/bench", json=body, headers=headers)
        assert res.status_code == 200, res.text
        if "text/event-stream" in res.headers["content-type"]:
            last = res.text.strip().split("\n\n")[-1]
            assert last.startswith("data: "), last
            return dict(httpx.Response(200, content=last[len("data: ") :]).json()["result"])
        return dict(res.json()["result"])

    msg = {"role": "user", "content": [{"text": name}]}
    first = await post({"data": {"message": msg}, "init": {}})
    assert first["finishReason"] == "interrupted"
    [held] = [p for p in first["message"]["content"] if (p.get("metadata") or {}).get("interrupt")]
    restart = {"toolRequest": held["toolRequest"], "metadata": {"resumed": {"toolApproved": True}}}
    resume = {"data": {"resume": {"restart": [restart]}}, "init": {"snapshotId": first["snapshotId"]}}
    final = await post(resume)
    again = await post(resume)  # the identical resume re-sent: the first result back
    assert (again["snapshotId"], again["message"]) == (final["snapshotId"], final["message"])
    return final


@pytest.mark.parametrize("headers", [{}, SSE], ids=["json", "sse"])
async def test_finished_turns_leave_no_task_running(headers: dict[str, str]) -> None:
    agent, ran = approval_agent()
    transport = httpx.ASGITransport(app=create_app(agent))
    before = asyncio.all_tasks()
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        for i in range(5):
            final = await cycle(client, f"c{i}", headers)
            assert final["finishReason"] == "stop"
            assert final["message"]["content"] == [{"text": "done"}]
    left = [t for t in asyncio.all_tasks() - before if not t.done()]
    for _ in range(100):  # the store's heartbeat watcher ends a poll interval after its last turn
        if not left:
            break
        await asyncio.sleep(0.01)
        left = [t for t in left if not t.done()]
    assert left == [], [t.get_coro() for t in left]
    assert ran == [f"c{i}" for i in range(5)]


@pytest.mark.parametrize("headers", [{}, SSE], ids=["json", "sse"])
async def test_served_cycles_leave_nothing_of_ours_to_the_cycle_collector(headers: dict[str, str]) -> None:
    # a turn's session held its invocation's emitter and the invocation the session: each request
    # left ~50 objects that only a collection frees (and that set collections off)
    agent, ran = approval_agent()
    transport = httpx.ASGITransport(app=create_app(agent))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        await cycle(client, "warm", headers)
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for i in range(3):
                await cycle(client, f"c{i}", headers)
            gc.collect()
            ours = [type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith("nb_agents")]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    assert ran == ["warm", "c0", "c1", "c2"]
    assert ours == []


async def test_frames_ready_together_share_one_write() -> None:
    """A zero-latency turn's chunks and its result are all queued by the time they are written."""
    agent, _ = approval_agent()
    app = create_app(agent)
    bodies: list[bytes] = []

    async def counting(scope: Any, receive: Any, send: Any) -> None:
        async def counted(message: Any) -> None:
            if message["type"] == "http.response.body":
                bodies.append(message["body"])
            await send(message)

        await app(scope, receive, counted)

    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=counting), base_url="http://test"
    ) as client:
        msg = {"role": "user", "content": [{"text": "c0"}]}
        res = await client.post("/bench", json={"data": {"message": msg}, "init": {}}, headers=SSE)
    frames = res.text.strip().split("\n\n")
    assert [f.split('"', 2)[1] for f in frames] == ["message", "message", "result"]
    assert b"".join(bodies).decode() == res.text  # every frame intact, in order
    assert len(bodies) < len(frames)
