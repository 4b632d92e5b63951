"""Forks (issue 15, item 4): answer a paused turn one way, and a copy of it another.

A transfer held by `ToolApproval` is approved in the chat and denied in its
fork. Both branches are stored, read back, listed and reopened from a new
`Agent` on the same store; each branch ran its tool as its answer said, once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from helpers import text_response, tool_call_response
from store_kinds import STORE_KINDS, make_store

import nb_agents as nba
from nb_agents.middleware import ApprovalHold, ToolApproval
from nb_agents.testing import FunctionModel

pytestmark = pytest.mark.anyio


def _reply(req: nba.GenerateRequest) -> Any:
    last = req.messages[-1]
    if last.role == "user":
        return tool_call_response(("transferMoney", "t1", {"amount": 500}))
    (out,) = [p.tool_response.output for p in last.content if p.tool_response is not None]
    return text_response("Sent $500." if out == "sent 500" else "Cancelled: nothing was sent.")


def bank(store: nba.SessionStore) -> tuple[nba.Agent, list[int]]:
    ran: list[int] = []

    @nba.tool(name="transferMoney")
    async def transfer(amount: int) -> str:
        ran.append(amount)
        return f"sent {amount}"

    agent = nba.define_agent(
        "bank",
        model=FunctionModel(_reply),
        tools=[transfer],
        store=store,
        use=[ToolApproval(allowed_tools=[])],
    )
    return agent, ran


def deny(res: nba.AgentResponse) -> nba.Part:
    hold = ApprovalHold.claim(res.interrupts[0].part)
    assert hold is not None
    return hold.deny()


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_a_fork_answered_differently_keeps_both_branches(kind: str, tmp_path: Path) -> None:
    store = make_store(kind, tmp_path)
    agent, ran = bank(store)
    chat = agent.chat()
    paused = await chat.send("send $500 to bob")
    assert paused.finish_reason == "interrupted"

    fork = await chat.fork()
    assert fork.snapshot_id != paused.snapshot_id and fork.session_id != paused.session_id
    assert fork.session_id is not None and fork.session_id.startswith(f"{paused.session_id}~fork-")
    assert fork.last is not None and [i.ref for i in fork.last.interrupts] == ["t1"]
    fork_id = fork.snapshot_id  # the chats move on as they are answered

    yes = await chat.resume(restart=[paused.interrupts[0].approve()])
    no = await fork.resume(respond=[deny(fork.last)])
    assert (yes.text, no.text) == ("Sent $500.", "Cancelled: nothing was sent.")
    assert ran == [500]  # approved once, denied once: the tool ran in one branch only

    # the same answers sent again replay; neither branch runs the tool again
    at_pause = agent.chat(snapshot_id=paused.snapshot_id)
    assert (await at_pause.resume(restart=[paused.interrupts[0].approve()])).text == "Sent $500."
    at_fork = agent.chat(snapshot_id=fork_id)
    assert (await at_fork.resume(respond=[deny(paused)])).text == "Cancelled: nothing was sent."
    assert ran == [500]

    # a new Agent on the same store reads both, lists the fork and reopens it
    again, ran_again = bank(store)
    (row,) = await again.forks(paused.session_id or "")
    assert row.fork_of == paused.snapshot_id and row.snapshot_id == fork_id
    assert row.session_id == fork.session_id and row.agent == "bank"
    assert [r.snapshot_id for r in await again.chat(snapshot_id=yes.snapshot_id).forks()] == [row.snapshot_id]
    original = await again.get_snapshot(session_id=paused.session_id)
    forked = await again.get_snapshot(session_id=fork.session_id)
    assert (
        original is not None
        and original.state is not None
        and original.state.messages[-1].text == "Sent $500."
    )
    assert forked is not None and forked.state is not None
    assert forked.state.messages[-1].text == "Cancelled: nothing was sent."
    assert [m.role for m in forked.state.messages] == [m.role for m in original.state.messages]
    assert [a.kind for a in await again.audit(fork.session_id or "")] == ["respond"]
    assert [a.kind for a in await again.audit(paused.session_id or "")] == ["restart"]

    reopened = again.chat(session_id=fork.session_id)
    more = await reopened.send("and now?")
    assert more.finish_reason == "interrupted" and more.session_id == fork.session_id
    assert ran_again == [] and ran == [500]
    # the fork's pause itself: answered once already, a different answer is refused
    stale = again.chat(snapshot_id=fork_id)
    with pytest.raises(nba.AgentError, match="already resumed"):
        await stale.resume(restart=[paused.interrupts[0].approve()])
    assert ran == [500]


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_an_answered_pause_forks_by_its_snapshot_id(kind: str, tmp_path: Path) -> None:
    agent, ran = bank(make_store(kind, tmp_path))
    chat = agent.chat()
    paused = await chat.send("send $500 to bob")
    await chat.resume(restart=[paused.interrupts[0].approve()])
    assert ran == [500]
    with pytest.raises(nba.FailedPreconditionError, match="not a paused turn"):
        await chat.fork()  # the chat's latest turn completed

    other = await agent.fork(paused.snapshot_id)
    assert other.last is not None
    # a fork of the fork is named from the same root session, and listed under the fork
    sub = await other.fork()
    assert sub.session_id is not None and sub.session_id.count("~fork-") == 1
    assert [r.snapshot_id for r in await other.forks()] == [sub.snapshot_id]
    assert [r.snapshot_id for r in await chat.forks()] == [other.snapshot_id]
    res = await other.resume(respond=[deny(other.last)])
    assert res.text == "Cancelled: nothing was sent." and ran == [500]
    assert sub.last is not None
    assert (await sub.resume(restart=[sub.last.interrupts[0].approve()])).text == "Sent $500."
    assert ran == [500, 500]


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_a_retried_fork_writes_once(kind: str, tmp_path: Path) -> None:
    agent, _ = bank(make_store(kind, tmp_path))
    chat = agent.chat()
    paused = await chat.send("send $500 to bob")
    forks = await asyncio.gather(*(chat.fork(key="try-2") for _ in range(4)))
    assert len({f.snapshot_id for f in forks}) == 1
    assert [r.snapshot_id for r in await chat.forks()] == [forks[0].snapshot_id]
    other = await chat.fork()  # no key: another fork
    listed = await agent.forks(paused.session_id or "")
    assert {r.snapshot_id for r in listed} == {forks[0].snapshot_id, other.snapshot_id}
    # forks are paused sessions of their own: `pending` lists the original and each fork
    assert {p.session_id for p in await agent.pending()} == {paused.session_id} | {
        r.session_id for r in listed
    }


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_forking_a_chat_that_is_not_paused_is_refused(kind: str, tmp_path: Path) -> None:
    store = make_store(kind, tmp_path)
    echo = nba.define_agent("echo", model=FunctionModel(lambda req: "hello"), store=store)
    chat = echo.chat()
    with pytest.raises(nba.FailedPreconditionError, match="no turn yet"):
        await chat.fork()
    res = await chat.send("hi")
    with pytest.raises(nba.FailedPreconditionError, match="it ended 'stop'"):
        await chat.fork()
    with pytest.raises(nba.NotFoundError):
        await echo.fork("no-such-snapshot")
    with pytest.raises(nba.InvalidArgumentError):
        await echo.fork()
    assert await echo.forks(res.session_id or "") == []
    assert await store.session_ids() == [res.session_id]  # nothing was written


def test_fork_sync_and_client_managed_state() -> None:
    ran: list[int] = []

    @nba.tool(name="transferMoney")
    async def transfer(amount: int) -> str:
        ran.append(amount)
        return f"sent {amount}"

    agent = nba.define_agent(
        "bank", model=FunctionModel(_reply), tools=[transfer], use=[ToolApproval(allowed_tools=[])]
    )
    chat = agent.chat()
    paused = chat.send_sync("send $500 to bob")
    fork = chat.fork_sync()
    assert fork.state is not None and fork.state.messages == chat.messages
    assert chat.resume_sync(restart=[paused.interrupts[0].approve()]).text == "Sent $500."
    assert fork.resume_sync(respond=[deny(paused)]).text == "Cancelled: nothing was sent."
    assert ran == [500]
    with pytest.raises(nba.FailedPreconditionError, match="not paused"):
        chat.fork_sync()


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_a_fork_keeps_its_owner_and_agent(kind: str, tmp_path: Path) -> None:
    store = make_store(kind, tmp_path)
    agent, ran = bank(store)
    ana, bob = {"auth": {"uid": "ana"}}, {"auth": {"uid": "bob"}}
    chat = agent.chat()
    paused = await chat.send("send $500 to bob", context=ana)
    with pytest.raises(nba.NotFoundError):
        await chat.fork(context=bob)  # another principal's pause reads as unknown
    fork = await chat.fork(context=ana)
    row = await agent.get_snapshot(fork.snapshot_id, context=ana)
    assert row is not None and (row.owner, row.agent) == ("ana", "bank")
    assert await agent.get_snapshot(fork.snapshot_id, context=bob) is None
    assert await agent.forks(paused.session_id or "", context=bob) == []
    assert [r.snapshot_id for r in await agent.forks(paused.session_id or "", context=ana)] == [
        row.snapshot_id
    ]
    other = nba.define_agent("other", model=FunctionModel(_reply), store=store)
    with pytest.raises(nba.NotFoundError):
        await other.fork(paused.snapshot_id)  # another agent's session, even on a shared store
    assert fork.last is not None
    res = await fork.resume(respond=[deny(fork.last)], context=ana)
    assert res.text == "Cancelled: nothing was sent." and ran == []
