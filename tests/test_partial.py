"""Answering some interrupts of a turn now and the rest later (issue 15, item 3).

A turn paused on three transfers: each is answered on its own (``partial=True``),
by concurrent callers that all start from the same paused snapshot. Every
transfer runs once, the turn stays paused until the last answer, and only then
is the model called. A Genkit-shaped resume that leaves some out is still
refused, naming how to opt in.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from helpers import text_response, tool_call_response
from store_kinds import STORE_KINDS, make_store

import nb_agents as nba
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio

ACCOUNTS = ["alice", "bob", "carol"]


def bank(store: nba.SessionStore | None, delay: float = 0.0) -> tuple[nba.Agent, ScriptedModel, list[str]]:
    ran: list[str] = []

    @nba.tool(name="transfer")
    async def transfer(to: str, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt({"to": to})
        await asyncio.sleep(delay)  # a slow side effect: the concurrent answers race it
        ran.append(to)
        return f"sent to {to}"

    calls = [("transfer", f"t-{who}", {"to": who}) for who in ACCOUNTS]
    model = ScriptedModel([tool_call_response(*calls), text_response("all sent")])
    agent = nba.define_agent("bank", model=model, tools=[transfer], store=store)
    return agent, model, ran


def approve(res: nba.AgentResponse, who: str) -> nba.Part:
    (i,) = [i for i in res.interrupts if i.input == {"to": who}]
    return i.restart(resumed=True)


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_each_interrupt_answered_on_its_own_runs_once_and_the_model_waits_for_the_last(
    kind: str, tmp_path: Path
) -> None:
    agent, model, ran = bank(make_store(kind, tmp_path))
    paused = await agent.chat().send("pay everyone")
    assert len(paused.interrupts) == 3

    chat = agent.chat(snapshot_id=paused.snapshot_id)
    first = await chat.resume(restart=[approve(paused, "alice")], partial=True)
    assert first.finish_reason == "interrupted" and ran == ["alice"] and model.calls == 1
    # the turn stays paused on the two left, and says so to whoever reads it
    assert sorted(i.input["to"] for i in first.interrupts) == ["bob", "carol"]
    (left,) = [p for p in await agent.pending() if p.snapshot_id == first.snapshot_id]
    assert len(left.interrupts) == 2

    second = await chat.resume(restart=[approve(first, "bob")], partial=True)
    assert second.finish_reason == "interrupted" and ran == ["alice", "bob"] and model.calls == 1
    last = await chat.resume(restart=[approve(second, "carol")], partial=True)
    assert last.finish_reason == "stop" and last.text == "all sent"
    assert ran == ["alice", "bob", "carol"] and model.calls == 2
    # the model sees one output per call, in the order it asked for them
    tool_msg = model.requests[1].messages[-1]
    assert [p.tool_response.output for p in tool_msg.content if p.tool_response] == [  # type: ignore[union-attr]
        "sent to alice",
        "sent to bob",
        "sent to carol",
    ]


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_concurrent_partial_answers_from_the_same_pause_each_take_effect_once(
    kind: str, tmp_path: Path
) -> None:
    agent, model, ran = bank(make_store(kind, tmp_path), delay=0.05)
    paused = await agent.chat().send("pay everyone")

    async def answer(who: str) -> nba.AgentResponse:
        # every caller starts from the snapshot it was shown: the first pause
        chat = agent.chat(snapshot_id=paused.snapshot_id)
        return await chat.resume(restart=[approve(paused, who)], partial=True)

    results = await asyncio.gather(*(answer(who) for who in ACCOUNTS))
    assert sorted(ran) == ACCOUNTS  # each transfer once
    assert model.calls == 2  # the model went on once, after the last answer
    reasons = sorted(r.finish_reason for r in results)
    assert reasons == ["interrupted", "interrupted", "stop"]
    # the same answer sent again replays its outcome, and runs nothing
    again = await answer("bob")
    assert again.finish_reason in ("interrupted", "stop") and sorted(ran) == ACCOUNTS
    assert model.calls == 2


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_the_same_interrupt_answered_twice_at_once_runs_once(kind: str, tmp_path: Path) -> None:
    agent, model, ran = bank(make_store(kind, tmp_path), delay=0.05)
    paused = await agent.chat().send("pay everyone")
    yes = approve(paused, "alice")
    chats = [agent.chat(snapshot_id=paused.snapshot_id) for _ in range(4)]
    results = await asyncio.gather(*(c.resume(restart=[yes], partial=True) for c in chats))
    assert ran == ["alice"]
    assert {r.snapshot_id for r in results} == {results[0].snapshot_id}  # one outcome, replayed


async def test_a_different_answer_to_an_interrupt_another_partial_answered_is_refused() -> None:
    agent, model, ran = bank(nba.InMemorySessionStore())
    paused = await agent.chat().send("pay everyone")
    first = await agent.chat(snapshot_id=paused.snapshot_id).resume(
        restart=[approve(paused, "alice")], partial=True
    )
    (alice,) = [i for i in paused.interrupts if i.input == {"to": "alice"}]
    late = agent.chat(snapshot_id=paused.snapshot_id)
    with pytest.raises(nba.AlreadyResumedError, match="already answered by another answer") as info:
        await late.resume(respond=[alice.respond("declined")], partial=True)
    # said as for a whole answer another went before: where what still waits is
    assert info.value.status == "FAILED_PRECONDITION" and info.value.by == first.snapshot_id
    assert f"'transfer' (ref: {alice.ref})" in str(info.value) and "did not pause" not in str(info.value)
    assert ran == ["alice"]
    # what waits is still answerable
    rest = await agent.chat(snapshot_id=first.snapshot_id).resume(
        restart=[approve(first, "bob"), approve(first, "carol")]
    )
    assert rest.text == "all sent" and sorted(ran) == ACCOUNTS


async def test_a_genkit_shaped_resume_that_leaves_some_out_is_still_refused() -> None:
    agent, model, ran = bank(nba.InMemorySessionStore())
    chat = agent.chat()
    paused = await chat.send("pay everyone")
    with pytest.raises(nba.AgentError, match=r"Unresolved tool request 'transfer#t-bob'") as info:
        await chat.resume(restart=[approve(paused, "alice")])
    assert info.value.status == "INVALID_ARGUMENT" and ran == []
    assert "partial=True" in info.value.details["hint"]
    with pytest.raises(nba.AgentError, match="at least one"):
        await chat.resume(partial=True)
    assert ran == [] and model.calls == 1
    # nothing was lost: the pause is answerable as a whole
    done = await chat.resume(restart=[approve(paused, who) for who in ACCOUNTS])
    assert done.text == "all sent" and ran == ACCOUNTS


async def test_partial_answers_mix_responds_and_restarts_and_work_without_a_store() -> None:
    agent, model, ran = bank(None)
    chat = agent.chat()
    paused = await chat.send("pay everyone")
    (bob,) = [i for i in paused.interrupts if i.input == {"to": "bob"}]
    first = await chat.resume(respond=[bob.respond("skipped")], partial=True)
    assert first.finish_reason == "interrupted" and ran == []
    done = await chat.resume(restart=[approve(first, "alice"), approve(first, "carol")])
    assert done.text == "all sent" and ran == ["alice", "carol"]
    outputs = [p.tool_response.output for p in model.requests[1].messages[-1].content if p.tool_response]  # type: ignore[union-attr]
    assert outputs == ["sent to alice", "skipped", "sent to carol"]
