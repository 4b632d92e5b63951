"""The inbox's batches, in process: every waiting interrupt listed, answered once however often sent.

On SQLite and PostgreSQL (the stores several processes share), against the
trust tests' ledger: a batch of rows across sessions goes out as one resume per
paused turn (partial when it leaves some waiting); the same batch sent again,
one after the other or at the same moment, runs each tool once.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest
from store_kinds import make_store
from trust_app import call, directive, make_agent, read_ledger

import nb_agents as nba
from nb_agents.inbox import answer_items, quick_answer, verbs_for

pytestmark = pytest.mark.anyio

ANA = {"auth": {"uid": "ana"}}
BOB = {"auth": {"uid": "bob"}}
LEE = {"auth": {"uid": "lee", "roles": ["approver"]}}
ASK = {"name": "payInvoice", "ref": "p1", "input": {"invoice": "INV-7"}}


async def three_pauses(agent: nba.Agent) -> list[nba.AgentResponse]:
    """ana: one transfer; bob: two transfers in one turn; ana: an invoice question."""
    return [
        await agent.chat().send(directive(call("a1", 5)), context=ANA),
        await agent.chat().send(directive(call("b1", 6), call("b2", 7, to="amy")), context=BOB),
        await agent.chat().send(directive(ASK), context=ANA),
    ]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_the_listing_has_every_waiting_interrupt_and_its_filters(kind: str, tmp_path: Path) -> None:
    agent = make_agent(make_store(kind, tmp_path), tmp_path / "ledger.jsonl")
    sent = await three_pauses(agent)
    rows = (await agent.pending(context=LEE)).items()
    assert [(r.tool, r.interrupt.ref, r.requested_by) for r in rows] == [
        ("transfer", "a1", "ana"),
        ("transfer", "b1", "bob"),
        ("transfer", "b2", "bob"),
        ("payInvoice", "p1", "ana"),
    ]
    first = rows[0]
    assert first.session_id == sent[0].session_id and first.input == {"amount": 5, "to": "bob"}
    assert first.summary.title == "Transfer" and first.age is not None and first.age >= timedelta(0)
    assert first.deadline is None and verbs_for(first) == ("approve", "deny", "cancel")
    assert rows[3].summary.question == "Pay invoice INV-7?"
    assert verbs_for(rows[3]) == ("approve", "deny", "cancel")  # its reply is approval-shaped
    # scoped by the caller; filtered by tool and age
    assert [r.interrupt.ref for r in (await agent.pending(context=ANA)).items()] == ["a1", "p1"]
    assert [r.interrupt.ref for r in (await agent.pending(context=BOB, tool="payInvoice")).items()] == []
    only = await agent.pending(context=LEE, tool="payInvoice")
    assert [r.interrupt.ref for r in only.items()] == ["p1"]
    assert list(await agent.pending(context=LEE, older_than=timedelta(hours=1))) == []
    assert len(await agent.pending(context=LEE, older_than=0)) == 3
    with pytest.raises(nba.InvalidArgumentError):
        await agent.pending(tool=[])
    with pytest.raises(nba.InvalidArgumentError):
        await agent.pending(older_than=-1)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("again", ["after", "at once"])
async def test_a_batch_sent_twice_answers_each_interrupt_once(kind: str, again: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    agent = make_agent(make_store(kind, tmp_path), ledger)
    await three_pauses(agent)
    rows = (await agent.pending(context=LEE)).items()
    a1, b1, b2, p1 = rows
    # approve a1 and b1 (b2 stays waiting: a partial answer), deny the invoice, with a reason
    batch = [
        (a1, *quick_answer(a1, "approve")),
        (b1, *quick_answer(b1, "approve")),
        (p1, *quick_answer(p1, "deny", reason="not ours")),
    ]
    if again == "after":
        first = await answer_items(batch, context=LEE)
        second = await answer_items(batch, context=LEE)
    else:
        first, second = await asyncio.gather(
            answer_items(batch, context=LEE), answer_items(batch, context=LEE)
        )
    for outcome in (*first, *second):
        assert outcome.ok, outcome.error
    assert sorted(line["ref"] for line in read_ledger(ledger)) == ["a1", "b1"]
    # what is left is b2 alone; answered rows left the listing
    left = (await agent.pending(context=LEE)).items()
    assert [(r.tool, r.interrupt.ref) for r in left] == [("transfer", "b2")]
    records = [r for s in {x.session_id for x in rows} for r in await agent.audit(s)]
    people = sorted((r.ref, r.kind, r.answered_by, r.requested_by) for r in records if r.decision == "person")
    assert people == [
        ("a1", "restart", "lee", "ana"),
        ("b1", "restart", "lee", "bob"),
        ("p1", "restart", "lee", "ana"),  # a resumable tool: its "no" is a restart it reads
    ]
    # a different answer to what was answered is refused, per turn, and runs nothing
    [late] = await answer_items([(a1, *quick_answer(a1, "cancel"))], context=LEE)
    assert late.error is not None and late.error.status == "FAILED_PRECONDITION"
    (b2,) = left
    [done] = await answer_items([(b2, *quick_answer(b2, "cancel"))], context=LEE)
    assert done.ok and done.response is not None and done.response.finish_reason == "stop"
    assert sorted(line["ref"] for line in read_ledger(ledger)) == ["a1", "b1"]
    assert list(await agent.pending(context=LEE)) == []


async def test_a_question_with_fields_is_not_approved_from_a_row(tmp_path: Path) -> None:
    from pydantic import BaseModel

    class Amount(BaseModel):
        amount: int

    ask = nba.define_interrupt(name="askAmount", description="How much?", output_schema=Amount)
    from nb_agents.testing import FunctionModel

    def model(req: nba.GenerateRequest) -> object:
        if req.messages[-1].role == "tool":
            return "ok"
        return {
            "message": {"role": "model", "content": [{"toolRequest": {"name": "askAmount", "ref": "q"}}]},
            "finishReason": "stop",
        }

    agent = nba.define_agent(
        "asker", model=FunctionModel(model), tools=[ask], store=make_store("sqlite", tmp_path)
    )
    await agent.chat().send("go")
    (row,) = (await agent.pending()).items()
    assert verbs_for(row) == ("cancel",)  # no denial fits {"amount": int}: only cancel
    with pytest.raises(nba.InvalidArgumentError, match="answer of its own"):
        quick_answer(row, "approve")
    [out] = await answer_items([(row, *quick_answer(row, "cancel"))])
    assert out.ok and [r.kind for r in await agent.audit(row.session_id or "")] == ["cancel"]
