"""The "Approve always" button of an approval form: it answers with a per-session rule."""

from __future__ import annotations

from typing import Any

import pytest
from widget_helpers import html_of, wire

import nb_agents as nba
from nb_agents.middleware import ToolApproval
from nb_agents.notebook import TurnView
from nb_agents.testing import FunctionModel
from nb_agents.types import GenerateRequest

pytestmark = pytest.mark.anyio


def _model(request: GenerateRequest) -> Any:
    last = request.messages[-1]
    if last.role == "tool":
        return f"read {last.content[0].tool_response.output}"  # type: ignore[union-attr]
    call = {"name": "readTable", "ref": f"r{len(request.messages)}", "input": {"table": last.text}}
    return {"message": {"role": "model", "content": [{"toolRequest": call}]}, "finishReason": "stop"}


async def test_approve_always_approves_and_later_calls_run_without_a_form() -> None:
    ran: list[str] = []

    @nba.tool(name="readTable")
    async def read_table(table: str) -> int:
        ran.append(table)
        return len(ran)

    store = nba.InMemorySessionStore()
    agent = nba.define_agent(
        "t", model=FunctionModel(_model), tools=[read_table], store=store, use=[ToolApproval()]
    )
    chat = agent.chat()
    res = await chat.send("sales")
    view = TurnView(res, chat)
    form = view.forms[0]
    assert form.actions() == ("approve", "always", "deny", "cancel", "edit")
    assert form.always_button.description == "Approve always"
    assert "rest of this session" in form.always_button.tooltip
    form.always_button.click()
    done = await view.task
    assert done is not None and done.text == "read 1"
    assert wire(view.last_resume.restart) == wire([res.interrupts[0].approve(always=True)])
    assert "for the rest of this session" in html_of(form.status)
    again = await chat.send("costs")
    assert again.finish_reason == "stop" and again.interrupts == [] and ran == ["sales", "costs"]
    [rule] = await chat.rules()
    kinds = [(r.kind, r.answer.get("rule")) for r in await agent.audit(chat.session_id or "")]
    assert kinds[1:] == [("rule-created", rule.id), ("rule", rule.id)]
    table = (await agent.audit(chat.session_id or ""))._repr_mimebundle_()["text/plain"]
    assert "approved always (this session): runs without asking from now on" in table
    assert "approved by approve always (this session)" in table
    assert rule.id not in table and "denyed" not in table  # rule ids are internals


async def test_a_chat_with_client_managed_state_offers_no_approve_always() -> None:
    @nba.tool(name="readTable")
    async def read_table(table: str) -> int:
        return 1

    agent = nba.define_agent("t", model=FunctionModel(_model), tools=[read_table], use=[ToolApproval()])
    chat = agent.chat()
    view = TurnView(await chat.send("sales"), chat)
    assert (
        view.forms[0].actions() == ("approve", "deny", "cancel", "edit")
        and view.forms[0].always_button is None
    )
