"""What an answered turn leaves, read as a newcomer reads it (issue 24, items 5, 6, 7 and 9).

Records say who answered in words ("you", or the name given), not the OS
user; no rule ids, snapshot or session ids; tool results in words; one
"Details" toggle; the past tense once answered; "Reason" wherever the reason
beside Deny shows. Amounts read as the schema says (dollars), schema
descriptions show as hints, the Deny reason is last in its row. Several
questions in one turn are each in a block of their own, an answered one
loses its "needs approval" badge, and the final line names each call.
Buttons are named by their words alone (no icon glyph).
"""

from __future__ import annotations

import re
from typing import Any

import ipywidgets as widgets
import pytest
from helpers import text_response, tool_call_response
from pydantic import BaseModel, Field
from widget_helpers import html_of, widgets_of

import nb_agents as nba
from nb_agents.middleware import ToolApproval
from nb_agents.notebook import TurnView
from nb_agents.testing import FunctionModel, ScriptedModel

pytestmark = pytest.mark.anyio

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Move(BaseModel):
    amount: float = Field(description="How much to move, in dollars")
    toAccount: str = Field(description="'checking' or 'savings'")


def bank(*responses: dict[str, Any]) -> tuple[nba.Agent, list[Any]]:
    ran: list[Any] = []

    @nba.tool(name="transferMoney")
    async def transfer(inp: Move) -> dict[str, Any]:
        ran.append(inp.amount)
        return {"success": True, "transactionId": "txn-800"}

    agent = nba.define_agent(
        "bank",
        model=ScriptedModel(list(responses)),
        tools=[transfer],
        store=nba.InMemorySessionStore(),
        use=[ToolApproval(allowed_tools=[])],
    )
    return agent, ran


MOVE = tool_call_response(("transferMoney", "t1", {"amount": 500, "toAccount": "savings"}))


async def test_a_record_reads_in_words_with_one_toggle_and_no_internals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    agent, ran = bank(MOVE, text_response("Done."), MOVE, text_response("Done."))
    res = await agent.chat().send("move it")
    view = TurnView(res)  # nobody named: the person at this notebook
    form = view.forms[0]
    waiting = html_of(form)
    assert "It runs only once you approve." in waiting
    # the amount as the schema says it is, and each description as a hint beside its value
    assert re.search(r"Amount</th><td[^>]*>(<span[^>]*>)?\$500\.00<", waiting), waiting
    assert (
        "How much to move, in dollars" in waiting and "&#x27;checking&#x27; or &#x27;savings&#x27;" in waiting
    )
    form.approve_button.click()
    await view.task
    assert ran == [500.0]
    assert view.outcome.startswith("Approved by you at "), view.outcome
    for shown in (html_of(view), view.record_html()):
        assert "by you" in shown and "Answered in this notebook" not in shown
        assert UUID.search(shown) is None  # no snapshot or session ids
        assert shown.count("<details") == 1  # the record's raw JSON, and nothing else folded away
        assert "It runs only once you approve." not in shown and "The assistant asked to run" in shown
        assert "Success: yes · Transaction ID: txn-800" in shown  # the result in words
        assert "{&quot;success&quot;" not in shown and '{"success"' not in shown
    named = TurnView(await agent.chat().send("again"), answered_by="ana")
    named.forms[0].approve_button.click()
    await named.task
    assert named.outcome.startswith("Approved by ana at ")


async def test_edit_arguments_shows_hints_and_the_deny_reason_is_last_in_its_row() -> None:
    agent, _ = bank(MOVE)
    form = TurnView(await agent.chat().send("move it")).forms[0]
    row = next(w for w in widgets_of(form) if isinstance(w, widgets.HBox) and form.deny_button in w.children)
    names = [getattr(w, "description", "") for w in row.children]
    assert names == ["Approve", "Approve always", "Edit arguments", "Cancel", "Deny", "Reason"]
    assert row.layout.flex_flow == "row wrap"
    # the reason box is never narrower than its label and hint (half an em a character): where the
    # row has no room for that, it wraps to a line of its own (the browser tests measure the hint)
    box = form.reason.widget
    least = float(box.layout.min_width.removesuffix("em"))
    assert least >= 5 + len(box.placeholder) / 2 and box.layout.flex == f"1 1 {box.layout.min_width}"
    # the buttons never shrink: a longer "Approve with changes" pushes nothing to a second line
    assert all(b.layout.flex == "0 0 auto" for b in row.children[:5])
    form.edit_toggle.value = True
    assert "How much to move, in dollars" in html_of(form.inputs.row)  # the hint beside the field


async def test_partial_answers_read_as_each_questions_own_and_the_last_line_names_each_call() -> None:
    paid: list[str] = []

    @nba.tool(name="payInvoice")
    async def pay(vendor: str, amount: float) -> str:
        paid.append(vendor)
        return f"paid {vendor}"

    def rules(request: nba.GenerateRequest) -> Any:
        if request.messages[-1].role == "tool":
            return text_response("done")
        return tool_call_response(
            *[
                ("payInvoice", ref, {"vendor": v, "amount": a})
                for ref, v, a in (("i1", "Acme", 120), ("i2", "Globex", 80), ("i3", "Initech", 300))
            ]
        )

    agent = nba.define_agent(
        "payables",
        model=FunctionModel(rules),
        tools=[pay],
        store=nba.InMemorySessionStore(),
        use=[ToolApproval(allowed_tools=[])],
    )
    view = TurnView(await agent.chat().send("pay"))
    assert view.partial
    acme, globex, initech = view.forms
    # each question in a block of its own: its status sits inside it, not above the next one
    assert all(f.layout.border_left for f in view.forms)
    acme.approve_button.click()
    await view.task
    assert acme.status in acme.children and "Sent" not in html_of(globex)
    mine = html_of(acme)
    assert "needs approval" not in mine and ">approved<" in mine
    assert "payInvoice (Acme) ran; the turn resumes when the last is answered" in mine
    globex.deny_button.click()
    await view.task
    initech.approve_button.click()
    await view.task
    assert paid == ["Acme", "Initech"] and view.state == "done"
    assert view.outcome.endswith(
        "payInvoice (Acme) ran, payInvoice (Globex) did not run, payInvoice (Initech) ran"
    ), view.outcome


def test_call_names_fall_back_to_a_number_when_nothing_sets_the_calls_apart() -> None:
    from types import SimpleNamespace as NS

    from nb_agents.notebook.outcomes import call_names

    same = [NS(interrupt=NS(name="ping", input={"host": "a"})) for _ in range(2)]
    other = NS(interrupt=NS(name="pong", input=None))
    assert call_names([*same, other]) == ["ping (#1)", "ping (#2)", "pong"]


async def test_every_button_is_named_by_its_words_alone() -> None:
    agent, _ = bank(MOVE, text_response("Done."))
    view = TurnView(await agent.chat().send("move it"))
    buttons = [w for w in widgets_of(view) if isinstance(w, widgets.Button | widgets.ToggleButton)]
    assert buttons and all(b.icon == "" for b in buttons)
    assert {b.description for b in buttons} >= {"Approve", "Deny", "Edit arguments", "Approve always"}
