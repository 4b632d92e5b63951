"""`chat.messages` is the stored history after every turn: every store, client-managed state, remote.

Before, a server-managed chat appended only the input and the reply: after a
resume it held [user, model (still marked interrupted), model] while the store
held [user, model, tool, model], and tool rounds went missing the same way.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers import text_response, tool_call_response

import nb_agents as nba
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def agent_with(store: nba.SessionStore | None) -> nba.Agent:
    @nba.tool(name="lookup")
    async def lookup(key: str) -> str:
        return f"value of {key}"

    @nba.tool(name="wire")
    async def wire(amount: int, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt({"amount": amount})
        return "wired"

    model = ScriptedModel(
        [
            tool_call_response(("lookup", "l1", {"key": "a"})),  # a tool round, then text
            text_response("a is known"),
            tool_call_response(("wire", "w1", {"amount": 5})),  # a pause
            text_response("wired!"),  # after the resume
            text_response("plain"),
        ]
    )
    return nba.define_agent("hist", model=model, tools=[lookup, wire], store=store)


def dumped(messages: list[nba.Message]) -> list[dict]:  # type: ignore[type-arg]
    return [m.to_wire() for m in messages]


async def stored(agent: nba.BaseAgent, chat: nba.Chat) -> list[nba.Message]:
    if chat.state is not None:
        return list(chat.state.messages)
    snap = await agent.get_snapshot(chat.snapshot_id)
    assert snap is not None and snap.state is not None
    return list(snap.state.messages)


async def walk(agent: nba.BaseAgent) -> list[list[str]]:
    chat = agent.chat()
    shapes = []
    res = await chat.send("what is a?")
    assert dumped(chat.messages) == dumped(await stored(agent, chat))
    shapes.append([m.role for m in chat.messages])
    res = await chat.send("wire 5")
    assert res.finish_reason == "interrupted"
    assert dumped(chat.messages) == dumped(await stored(agent, chat))
    res = await chat.resume(restart=[res.interrupts[0].restart(resumed=True)])
    assert res.text == "wired!"
    assert dumped(chat.messages) == dumped(await stored(agent, chat))
    shapes.append([m.role for m in chat.messages])
    await chat.send("again")
    assert dumped(chat.messages) == dumped(await stored(agent, chat))
    shapes.append([m.role for m in chat.messages])
    return shapes


EXPECTED = [
    ["user", "model", "tool", "model"],
    ["user", "model", "tool", "model", "user", "model", "tool", "model"],
    ["user", "model", "tool", "model", "user", "model", "tool", "model", "user", "model"],
]


async def test_local_chat_messages_are_the_stored_history(store: nba.SessionStore) -> None:
    assert await walk(agent_with(store)) == EXPECTED


async def test_client_managed_chat_messages_are_the_state_history() -> None:
    assert await walk(agent_with(None)) == EXPECTED


@pytest.fixture
def served() -> Iterator[str]:
    from server.live import LiveServer

    from nb_agents.server import create_app

    server = LiveServer(create_app(agent_with(nba.InMemorySessionStore())))
    server.start()
    yield f"{server.url}/hist"
    server.stop()


async def test_remote_chat_messages_are_the_stored_history(served: str) -> None:
    assert await walk(nba.remote_agent(served)) == EXPECTED
