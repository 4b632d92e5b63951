"""`agent.load_chat(snapshot_id=|session_id=)`: a chat hydrated from a stored snapshot.

Genkit's ``loadChat`` (JS) / ``load_chat`` (Python) read the snapshot and give a chat
holding its messages, custom state, artifacts, snapshot id and session id, whose next
turn continues from that snapshot. On `BaseAgent`, so a local agent and a
`remote_agent` over a real uvicorn server both have it, with a ``_sync`` twin.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import nb_agents as nba
from nb_agents.remote import remote_agent

from .live import ApprovalReply, banking_agent

pytestmark = pytest.mark.anyio


async def load(agent: nba.BaseAgent, sync: bool, *args: Any, **kwargs: Any) -> nba.Chat:
    return agent.load_chat_sync(*args, **kwargs) if sync else await agent.load_chat(*args, **kwargs)


def notes_agent(store: nba.SessionStore) -> nba.Agent:
    async def take_note(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
        text = inp.message.text if inp.message else ""
        await ctx.session.update_custom(lambda cur: {"notes": [*(cur or {}).get("notes", []), text]})
        await ctx.session.add_artifacts([{"name": "last", "parts": [{"text": text}]}])
        return f"noted: {text}"

    return nba.define_custom_agent("notes", take_note, store=store)


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
@pytest.mark.parametrize("where", ["local", "remote"])
async def test_load_chat_hydrates_and_continues_from_the_snapshot(
    serve, tmp_path: Path, where: str, sync: bool
) -> None:
    local = notes_agent(nba.SqliteSessionStore(tmp_path / "notes.db"))
    agent: nba.BaseAgent = local if where == "local" else remote_agent(serve(local) + "/notes")
    chat = agent.chat()
    first = await chat.send("milk")
    second = await chat.send("eggs")

    loaded = await load(agent, sync, first.snapshot_id)
    assert (loaded.snapshot_id, loaded.session_id) == (first.snapshot_id, first.session_id)
    assert [m.text for m in loaded.messages] == ["milk", "noted: milk"]
    assert loaded.custom == {"notes": ["milk"]}
    assert [(a.name, a.parts[0].text) for a in loaded.artifacts] == [("last", "milk")]
    assert loaded.state is None  # a server-managed chat sends the snapshot id, never a state blob
    # the next turn branches from that very snapshot (a millisecond later: the newest leaf is the
    # newest by creation time, to the millisecond, so two leaves made within one tie by id)
    await asyncio.sleep(0.002)
    branch = await loaded.send("bread")
    assert branch.custom == {"notes": ["milk", "bread"]}
    assert [m.text for m in loaded.messages] == ["milk", "noted: milk", "bread", "noted: bread"]

    latest = await load(agent, sync, session_id=first.session_id)
    assert latest.snapshot_id == branch.snapshot_id != second.snapshot_id  # the newest leaf
    assert latest.custom == {"notes": ["milk", "bread"]}


@pytest.mark.parametrize("where", ["local", "remote"])
async def test_a_loaded_chat_answers_the_interrupt_it_holds(serve, tmp_path: Path, where: str) -> None:
    local, transfer_money, executed = banking_agent(nba.SqliteSessionStore(tmp_path / "bank.db"))
    agent: nba.BaseAgent = local if where == "local" else remote_agent(serve(local) + "/bankingAgent")
    paused = await agent.chat().send("Transfer $500 to my savings account.")
    assert paused.finish_reason == "interrupted"

    # e.g. after a kernel restart: only the snapshot id survived
    loaded = await agent.load_chat(paused.snapshot_id)
    [pause] = loaded.messages[-1].interrupts()
    call = transfer_money.interrupted(pause)
    assert call is not None
    done = await loaded.resume(restart=[call.restart(ApprovalReply(approved=True))])
    assert done.finish_reason == "stop" and done.text == "Done: transaction txn-123."
    assert len(executed) == 1


@pytest.mark.parametrize("where", ["local", "remote"])
async def test_load_chat_refuses_an_unknown_snapshot_and_a_wrong_call(
    serve, tmp_path: Path, where: str
) -> None:
    local = notes_agent(nba.InMemorySessionStore())
    agent: nba.BaseAgent = local if where == "local" else remote_agent(serve(local) + "/notes")
    with pytest.raises(nba.NotFoundError) as unknown:
        await agent.load_chat("no-such-snapshot")
    assert unknown.value.message == "Snapshot no-such-snapshot not found."
    with pytest.raises(nba.NotFoundError, match="Session nobody not found"):
        agent.load_chat_sync(session_id="nobody")
    with pytest.raises(nba.InvalidArgumentError, match="exactly one of snapshot_id and session_id"):
        await agent.load_chat()
    with pytest.raises(nba.InvalidArgumentError, match="exactly one"):
        await agent.load_chat("a", session_id="b")
