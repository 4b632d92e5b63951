"""The answers of issue 25 on every store: cancel, scoped "always" rules, and approvers.

Each is held against the real ledger of `trust_app` (what ran) and the audit:

* **cancel** is a third answer: the tool does not run, the model reads
  ``{"cancelled": ...}`` (not a denial), the audit says kind ``cancel``,
  decision ``person``; any interrupt can be cancelled, whatever its output schema;
* **scoped rules**: ``approve(always=True, scope="arguments")`` answers only
  calls with exactly those arguments, listed with its scope, revocable;
* **approvers**: a context with ``roles: ["approver"]`` lists and answers
  another principal's waiting interrupts, never sends into the session; the
  audit says ``answered_by`` the approver and ``requested_by`` the owner.
  Anyone else gets NOT_FOUND.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from store_kinds import make_store
from trust_app import call, directive, make_agent, read_ledger

import nb_agents as nba

pytestmark = pytest.mark.anyio

STORES = ["memory", "sqlite", "postgres"]
ANA = {"auth": {"uid": "ana"}}
LEE = {"auth": {"uid": "lee", "roles": ["approver"]}}
BOB = {"auth": {"uid": "bob"}}
FAKE = {"auth": {"roles": ["approver"]}}  # a role without a principal is nobody


def agent_on(kind: str, tmp_path: Path) -> tuple[nba.Agent, Path]:
    ledger = tmp_path / "ledger.jsonl"
    return make_agent(make_store(kind, tmp_path), ledger), ledger


def tool_output(res: Any, name: str) -> Any:
    """What the model read for the call of `name` in the turn's tool message."""
    for msg in res.messages:
        if msg.role == "tool":
            for p in msg.content:
                if p.tool_response is not None and p.tool_response.name == name:
                    return p.tool_response.output
    raise AssertionError(f"no tool response of {name}")


# -- cancel -------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", STORES)
async def test_cancel_runs_nothing_and_tells_the_model(kind: str, tmp_path: Path) -> None:
    agent, ledger = agent_on(kind, tmp_path)
    chat = agent.chat()
    res = await chat.send(directive(call("t1", 5)))
    hold = res.interrupts[0]  # any interrupt cancels, held or not
    done = await chat.resume(respond=[hold.cancel("not needed any more")])
    assert done.finish_reason == "stop" and read_ledger(ledger) == []
    out = tool_output(done, "transfer")
    assert out == {"cancelled": "The user cancelled the call to 'transfer': not needed any more"}
    [rec] = await agent.audit(res.session_id)
    assert (rec.kind, rec.decision, rec.input) == ("cancel", "person", None)
    # the same cancel again replays; a different answer is refused: cancelled exactly once
    again = await agent.chat(snapshot_id=res.snapshot_id).resume(respond=[hold.cancel("not needed any more")])
    assert again.finish_reason == "stop"
    with pytest.raises(nba.AgentError) as err:
        await agent.chat(snapshot_id=res.snapshot_id).resume(restart=[hold.approve()])
    assert err.value.status == "FAILED_PRECONDITION"
    assert read_ledger(ledger) == []


@pytest.mark.parametrize("kind", ["sqlite"])
async def test_a_question_with_an_output_schema_can_be_cancelled(kind: str, tmp_path: Path) -> None:
    agent, ledger = agent_on(kind, tmp_path)
    chat = agent.chat()
    res = await chat.send(directive({"name": "payInvoice", "ref": "p1", "input": {"invoice": "INV-9"}}))
    (i,) = res.interrupts
    assert i.data == {"question": "Pay invoice INV-9?"}
    with pytest.raises(nba.AgentError):  # a made-up output still fails the schema
        await agent.chat(snapshot_id=res.snapshot_id).resume(respond=[i.respond({"cancelled": 1})])
    done = await chat.resume(respond=[i.cancel()])
    assert tool_output(done, "payInvoice") == {"cancelled": "The user cancelled the call to 'payInvoice'."}
    assert read_ledger(ledger) == []
    assert [r.kind for r in await agent.audit(res.session_id)] == ["cancel"]


# -- scoped rules -------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", STORES)
async def test_an_arguments_rule_answers_only_those_arguments(kind: str, tmp_path: Path) -> None:
    agent, ledger = agent_on(kind, tmp_path)
    chat = agent.chat()
    res = await chat.send(directive(call("t1", 5)))
    done = await chat.resume(restart=[res.interrupts[0].approve(always=True, scope="arguments")])
    assert done.finish_reason == "stop"
    [rule] = await agent.rules(res.session_id)
    assert (rule.scope, rule.input) == ("arguments", {"amount": 5, "to": "bob"})
    assert "only these arguments" in rule.scope_words
    # the same arguments run without a pause; others are held
    same = await chat.send(directive(call("t2", 5)))
    assert same.finish_reason == "stop"
    other = await chat.send(directive(call("t3", 6)))
    assert other.finish_reason == "interrupted"
    assert [line["ref"] for line in read_ledger(ledger)] == ["t1", "t2"]
    rec = [r for r in await agent.audit(res.session_id) if r.ref == "t2"]
    assert [(r.kind, r.decision, r.input) for r in rec] == [("rule", "rule", {"amount": 5, "to": "bob"})]
    # revocable as any rule: the same arguments are held again
    await chat.resume(respond=[nba.ApprovalHold(other.interrupts[0].part).deny()])
    await agent.revoke_rule(res.session_id, rule.id)
    again = await chat.send(directive(call("t4", 5)))
    assert again.finish_reason == "interrupted"
    html = nba.SessionRules([rule])._repr_mimebundle_()["text/html"]
    assert "only these arguments" in html


async def test_a_tool_rule_is_stored_as_before(tmp_path: Path) -> None:
    agent, _ = agent_on("sqlite", tmp_path)
    chat = agent.chat()
    res = await chat.send(directive(call("t1", 5)))
    await chat.resume(restart=[res.interrupts[0].approve(always=True, scope="tool")])
    [rule] = await agent.rules(res.session_id)
    assert rule.scope == "tool" and "scope" not in rule.to_dict()
    assert (await chat.send(directive(call("t2", 999)))).finish_reason == "stop"
    assert (await chat.send(directive(call("t3", 5000)))).finish_reason == "stop"  # the deny rule answers
    assert [line["ref"] for line in read_ledger(tmp_path / "ledger.jsonl")] == ["t1", "t2"]


async def test_a_scope_is_checked_before_anything_is_sent(tmp_path: Path) -> None:
    agent, _ = agent_on("memory", tmp_path)
    res = await agent.chat().send(directive(call("t1", 5)))
    i = res.interrupts[0]
    with pytest.raises(ValueError, match="'tool' or 'arguments'"):
        i.approve(always=True, scope="everything")
    with pytest.raises(ValueError, match="always=True"):
        i.approve(scope="arguments")
    forged = i.restart(resumed={"toolApproved": True, "always": True, "scope": "everything"})
    out = await agent.run(
        nba.AgentInput(resume=nba.ToolResume(restart=[forged])), snapshot_id=res.snapshot_id
    )
    assert out.finish_reason == "failed" and out.error is not None and "scope" in out.error.message


# -- approvers ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", STORES)
async def test_an_approver_answers_and_never_sends(kind: str, tmp_path: Path) -> None:
    agent, ledger = agent_on(kind, tmp_path)
    res = await agent.chat().send(directive(call("t1", 5)), context=ANA)
    assert res.finish_reason == "interrupted"
    # the approver and the owner see it; an outsider and a role without a principal do not
    assert [p.snapshot_id for p in await agent.pending(context=LEE)] == [res.snapshot_id]
    assert [p.snapshot_id for p in await agent.pending(context=ANA)] == [res.snapshot_id]
    assert list(await agent.pending(context=BOB)) == []
    assert list(await agent.pending(context=FAKE)) == []
    (item,) = await agent.pending(context=LEE)
    assert item.requested_by == "ana"
    # an approver may not send into ana's session, by session id or by snapshot
    for init in (nba.AgentInit(session_id=res.session_id), nba.AgentInit(snapshot_id=res.snapshot_id)):
        msg = nba.AgentInput(message=nba.Message(role="user", content=[nba.Part(text="hi")]))
        out = await agent.invoke(msg, init, options=nba.CallOptions(context=LEE))
        assert out.finish_reason == "failed" and out.error is not None and out.error.status == "NOT_FOUND"
    # nor slip a message in beside an answer
    both = nba.AgentInput(
        message=nba.Message(role="user", content=[nba.Part(text="hi")]),
        resume=nba.ToolResume(restart=[res.interrupts[0].approve()]),
    )
    out = await agent.invoke(
        both, nba.AgentInit(snapshot_id=res.snapshot_id), options=nba.CallOptions(context=LEE)
    )
    assert out.finish_reason == "failed" and out.error is not None and out.error.status == "NOT_FOUND"
    # an outsider's answer is NOT_FOUND
    with pytest.raises(nba.AgentError) as err:
        await agent.chat(snapshot_id=res.snapshot_id).resume(
            restart=[res.interrupts[0].approve()], context=BOB
        )
    assert err.value.status == "NOT_FOUND"
    assert read_ledger(ledger) == []
    # the approver's answer runs the call once, audited as lee's for ana
    done = await item.chat().resume(restart=[item.interrupts[0].approve()], context=LEE)
    assert done.finish_reason == "stop"
    assert [line["ref"] for line in read_ledger(ledger)] == ["t1"]
    [rec] = await agent.audit(res.session_id, context=LEE)
    assert (rec.answered_by, rec.requested_by, rec.decision) == ("lee", "ana", "person")


async def test_an_approver_cannot_message_after_answering_on_a_connection(tmp_path: Path) -> None:
    agent, ledger = agent_on("sqlite", tmp_path)
    res = await agent.chat().send(directive(call("t1", 5)), context=ANA)
    async with agent.connect(snapshot_id=res.snapshot_id, context=LEE) as conn:
        conn.send_resume(nba.ToolResume(restart=[res.interrupts[0].approve()]))
        conn.send_text(directive(call("t2", 7)))
        out = await conn.output()
    assert out.finish_reason == "failed" and out.error is not None and out.error.status == "NOT_FOUND"
    assert [line["ref"] for line in read_ledger(ledger)] == ["t1"]
    latest = await agent.get_snapshot(session_id=res.session_id)
    assert latest is not None and latest.state is not None
    assert all("t2" not in m.text for m in latest.state.messages)
