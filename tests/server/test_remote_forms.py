"""A notebook form on a remote agent (`remote_agent` over a real uvicorn server) whose pause
another answer took first: the remote side has no audit to read, so the refusal itself says
where that answer went; the form closes without ids, and the chat goes on from there."""

from __future__ import annotations

import pytest
from helpers import text_response, tool_call_response

import nb_agents as nba
from nb_agents.middleware import ToolApproval
from nb_agents.notebook import TurnView
from nb_agents.remote import remote_agent
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


async def test_a_remote_form_answered_from_another_tab_closes_and_its_chat_follows(serve) -> None:
    ran: list[int] = []  # the bill is cancelled in another tab; this notebook's Approve comes too late

    @nba.tool(name="payBill")
    async def pay_bill(amount: int) -> str:
        ran.append(amount)
        return "paid"

    model = ScriptedModel([tool_call_response(("payBill", "b1", {"amount": 40})), text_response("Not paid.")])
    agent = nba.define_agent(
        "bills", model=model, tools=[pay_bill], use=[ToolApproval()], store=nba.InMemorySessionStore()
    )
    url = serve(agent) + "/bills"
    chat = remote_agent(url).chat()
    res = await chat.send("pay the bill")
    view = TurnView(res, chat)
    other = remote_agent(url).chat(snapshot_id=res.snapshot_id)  # another tab, another client
    first = await other.resume(respond=[res.interrupts[0].cancel("not this month")])
    assert first.text == "Not paid." and ran == []

    view.forms[0].approve_button.click()
    assert (await view.task) is None and view.state == "stale"
    assert view.outcome == "Already answered elsewhere"
    assert res.snapshot_id not in view.header.value + view.status.value
    assert view.forms[0].approve_button.disabled or view.forms[0].approve_button.layout.display == "none"
    await view.following
    assert chat.snapshot_id == first.snapshot_id and chat.messages[-1].text == "Not paid."
    assert ran == [] and model.calls == 2  # the late approval ran nothing
