"""The Inbox widget and the forms' Cancel button, clicked without a browser (ipywidgets' Button.click()).

Against the trust tests' agent on SQLite and its ledger: rows for every waiting
interrupt across sessions and agents, filters that hide rows, a batch with a
per-row override, a batch clicked twice (once), answered rows leaving, ages
that tick; the Cancel button of a form runs nothing and is audited as cancel.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pytest
from store_kinds import make_store
from trust_app import call, directive, make_agent, read_ledger

import nb_agents as nba
from nb_agents.notebook import Inbox, TurnView

pytestmark = pytest.mark.anyio

ANA = {"auth": {"uid": "ana"}}
BOB = {"auth": {"uid": "bob"}}
ASK = {"name": "payInvoice", "ref": "p1", "input": {"invoice": "INV-<b>7</b>"}}


def html_of(root: Any) -> str:
    out = root.value if isinstance(root, widgets.HTML) else ""
    return out + "".join(html_of(c) for c in getattr(root, "children", ()))


async def paused(kind: str, tmp_path: Path) -> tuple[nba.Agent, Path]:
    ledger = tmp_path / "ledger.jsonl"
    agent = make_agent(make_store(kind, tmp_path), ledger)
    await agent.chat().send(directive(call("a1", 5)), context=ANA)
    await agent.chat().send(directive(call("b1", 6), call("b2", 7, to="amy")), context=BOB)
    await agent.chat().send(directive(ASK), context=ANA)
    return agent, ledger


def refs(inbox: Inbox, rows: Any = None) -> list[str | None]:
    return [r.item.interrupt.ref for r in (inbox.rows if rows is None else rows)]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_select_override_and_send_twice(kind: str, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    agent, ledger = await paused(kind, tmp_path)
    inbox = await Inbox(agent, answered_by="lee", tick=None)
    assert refs(inbox) == ["a1", "b1", "b2", "p1"]
    assert "4 interrupts waiting for an answer" in html_of(inbox)
    text = html_of(inbox.list_box)
    assert "asked by ana" in text and "asked by bob" in text and "waiting" in text
    assert "INV-&lt;b&gt;7&lt;/b&gt;" in text and "<b>7</b>" not in text  # the model's text, inert
    a1, b1, b2, p1 = inbox.rows
    a1.selected.value = b1.selected.value = True
    p1.choice.value = "deny"  # a row's own verb: selects it, and wins over the batch's
    assert p1.selected.value
    inbox.buttons["approve"].click()
    inbox.buttons["approve"].click()  # clicked twice while the batch goes out: ignored
    assert inbox.task is not None
    await inbox.task
    assert sorted(line["ref"] for line in read_ledger(ledger)) == ["a1", "b1"]
    assert refs(inbox) == ["b2"]  # answered rows left; b2 waits in what its turn left
    assert "Approved 2, denied 1" in inbox.status.value
    # the same batch from another inbox (a second tab): each answer was taken once already
    other = await Inbox(agent, answered_by="lee", tick=None)
    assert refs(other) == ["b2"]
    people = [
        (r.ref, r.answered_by, r.requested_by)
        for t in {x.item.session_id for x in (a1, b1, p1)}
        for r in await agent.audit(t or "")
        if r.decision == "person"
    ]
    assert sorted(people) == [("a1", "lee", "ana"), ("b1", "lee", "bob"), ("p1", "lee", "ana")]
    # cancel the last one: the inbox is empty
    other.rows[0].selected.value = True
    outcomes = await other.send("cancel")
    assert [o.ok for o in outcomes] == [True] and other.rows == []
    assert sorted(line["ref"] for line in read_ledger(ledger)) == ["a1", "b1"]
    assert "0 interrupts waiting" in html_of(other)


async def test_two_sends_at_once_answer_once(tmp_path: Path) -> None:
    agent, ledger = await paused("sqlite", tmp_path)
    inbox = await Inbox(agent, tick=None)
    for row in inbox.rows[:3]:
        row.selected.value = True
    first, second = await asyncio.gather(inbox.send("approve"), inbox.send("approve"))
    assert second == [] and all(o.ok for o in first)
    assert sorted(line["ref"] for line in read_ledger(ledger)) == ["a1", "b1", "b2"]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_an_inbox_behind_another_says_who_answered_first(kind: str, tmp_path: Path) -> None:
    """Two approvers' inboxes list the same rows; kim answers first. lee's batch then
    runs nothing, and says whose answers went first: by name, never the engine's ids,
    nor "approved" for an approval that was kim's."""
    agent, ledger = await paused(kind, tmp_path)
    kim = await Inbox(agent, answered_by="kim", tick=None)
    lee = await Inbox(agent, answered_by="lee", tick=None)
    kim_again = await Inbox(agent, answered_by="kim", tick=None)  # kim's second tab
    for inbox in (kim, lee):
        for row in inbox.rows[:2]:  # a1 (ana's turn) and b1 (bob's, which also waits on b2)
            row.selected.value = True
    await kim.send("approve")
    assert "Approved 2" in kim.status.value
    lee.rows[1].choice.value = "deny"  # a different answer to b1 than kim's
    outcomes = await lee.send("approve")
    assert sorted(line["ref"] for line in read_ledger(ledger)) == ["a1", "b1"]  # nothing ran again
    assert [o.replayed for o in outcomes] == [True, False]  # a1: the same answer; b1: another
    said = lee.status.value
    assert "Nothing answered" in said and "Approved" not in said, said
    assert "Already answered, nothing ran again:" in said, said
    assert said.count("approved by kim at ") == 2, said
    assert "snapshot" not in said.lower() and "already resumed" not in said, said
    assert sorted(refs(lee)) == ["b2", "p1"]  # the refresh after the batch: what is still waiting
    kim_again.rows[0].selected.value = True
    await kim_again.send("approve")
    assert "Already answered, nothing ran again:" in kim_again.status.value
    assert "approved by you at " in kim_again.status.value  # her own, from the other tab
    assert sorted(line["ref"] for line in read_ledger(ledger)) == ["a1", "b1"]


async def test_filters_hide_rows_and_ages_tick(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    agent, _ = await paused("sqlite", tmp_path)
    other = make_agent(make_store("memory", tmp_path), tmp_path / "other.jsonl", name="support")
    await other.chat().send(directive(call("s1", 1)))
    inbox = await Inbox([agent, other], tick=None)
    assert refs(inbox) == ["a1", "b1", "b2", "p1", "s1"]
    inbox.tool_filter.value = "payInvoice"
    assert refs(inbox, inbox.shown()) == ["p1"] and "5 interrupts waiting for an answer · 1 shown" in html_of(
        inbox
    )
    inbox.tool_filter.value = "all"
    inbox.agent_filter.value = "support"
    assert refs(inbox, inbox.shown()) == ["s1"]
    inbox.select_all.value = True  # selects what is shown only
    assert [r.item.interrupt.ref for r in inbox.selected()] == ["s1"]
    inbox.agent_filter.value = "all"
    inbox.age_filter.value = "over 1 day"
    assert inbox.shown() == [] and inbox.selected() == []
    inbox.age_filter.value = "any age"
    before = inbox.rows[0].when.value
    assert before.startswith("waiting ")
    inbox.tick()
    assert inbox.rows[0].when.value.startswith("waiting ")
    # a question that needs its own form offers no approve; the batch leaves it waiting
    assert [o for o, _ in [(r.choice.options, r) for r in inbox.rows]][3][1:] == (
        ("Approve", "approve"), ("Deny", "deny"), ("Cancel", "cancel"),
    )  # fmt: skip
    # static record: a table of what waits, no ages
    monkeypatch.setenv("NB_AGENTS_STATIC", "1")
    record = inbox._static_bundle()
    assert "5 interrupts waiting" in record["text/plain"] and "waiting 0 s" not in record["text/html"]


async def test_the_forms_cancel_button(tmp_path: Path) -> None:
    agent, ledger = await paused("sqlite", tmp_path)
    chat = agent.chat()
    res = await chat.send(directive(call("c1", 9)))
    view = TurnView(res, chat)
    form = view.forms[0]
    assert form.cancel_button is not None and "cancel" in form.actions()
    form.reason.widget.value = "wrong account"  # type: ignore[union-attr]
    form.cancel_button.click()
    if view.task is not None:
        await view.task
    assert "c1" not in [line["ref"] for line in read_ledger(ledger)]
    [rec] = await agent.audit(res.session_id or "")
    assert (rec.kind, rec.decision) == ("cancel", "person")
    assert rec.answer == {"cancelled": "The user cancelled the call to 'transfer': wrong account"}
    assert "Cancelled" in html_of(view)
