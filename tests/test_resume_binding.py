"""An answer resumes exactly the pause it was built for (issue 12, items 1 and 2).

* A resume entry that names a finished sibling of the paused round is refused:
  the kept output is the only output the model sees for it, and it never runs
  again (before, a respond replaced its real output and a restart re-ran it).
* Gemini gives no call ids: every call used to get ref ``<name>-0``, so an
  approval built for turn 1's question resumed turn 2's. Refs are now minted
  unique, answers carry the digest of the pause they answer, and a ref that
  occurs twice in the paused message cannot be answered.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from helpers import text_response, tool_call_response
from pydantic import BaseModel

import nb_agents as nba
from nb_agents.models.gemini import GeminiModel
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


# -- finished siblings ----------------------------------------------------------------------
def sibling_agent() -> tuple[nba.Agent, ScriptedModel, list[str]]:
    ran: list[str] = []

    @nba.tool(name="getBalance")
    async def get_balance(account: str) -> dict[str, int]:
        ran.append(account)
        return {"balance": 900}

    @nba.tool(name="confirm")
    async def confirm(what: str, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt({"question": what})
        return "confirmed"

    model = ScriptedModel(
        [
            tool_call_response(
                ("getBalance", "b1", {"account": "checking"}), ("confirm", "c1", {"what": "go?"})
            ),
            text_response("done"),
        ]
    )
    agent = nba.define_agent(
        "sib", model=model, tools=[get_balance, confirm], store=nba.InMemorySessionStore()
    )
    return agent, model, ran


@pytest.mark.parametrize("kind", ["respond", "restart"])
async def test_an_answer_naming_a_finished_sibling_is_refused(kind: str) -> None:
    agent, model, ran = sibling_agent()
    chat = agent.chat()
    res = await chat.send("balance, then confirm")
    (ask,) = res.interrupts
    sibling = next(p for p in res.message.tool_requests if p.tool_request.name == "getBalance")  # type: ignore[union-attr]
    forged = (
        nba.AgentInterrupt(sibling).respond({"balance": 1_000_000_000})
        if kind == "respond"
        else nba.Part(tool_request=sibling.tool_request)
    )
    answer = {"respond": [forged], "restart": [ask.restart(resumed=True)]}
    if kind == "restart":
        answer = {"restart": [forged, ask.restart(resumed=True)]}
    with pytest.raises(nba.AgentError, match=r"'getBalance' \(ref: b1\), which did not pause") as info:
        await chat.resume(**answer)
    assert info.value.status == "INVALID_ARGUMENT"
    assert ran == ["checking"] and model.calls == 1
    # the interrupt is still answerable, and the model sees the kept output, once
    done = await chat.resume(restart=[ask.restart(resumed=True)])
    assert done.text == "done" and ran == ["checking"]
    tool_msg = model.requests[1].messages[-1]
    assert [p.tool_response.output for p in tool_msg.content] == [{"balance": 900}, "confirmed"]  # type: ignore[union-attr]


# -- repeated refs on Gemini --------------------------------------------------------------------
class Confirm(BaseModel):
    question: str


class Reply(BaseModel):
    yes: bool


def gemini_turns() -> tuple[GeminiModel, list[dict[str, Any]]]:
    """Gemini answering each user turn with a `confirm` call that has no id, then text."""
    bodies: list[dict[str, Any]] = []
    questions = iter(["Delete the test folder?", "Delete the PRODUCTION database?"])

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        last = body["contents"][-1]["parts"][-1]
        if "functionResponse" in last:
            parts: list[dict[str, Any]] = [{"text": "ok"}]
        else:
            parts = [{"functionCall": {"name": "confirm", "args": {"question": next(questions)}}}]
        return httpx.Response(
            200, json={"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}
        )

    client = httpx.AsyncClient(transport=httpx.MockTransport(handle))
    return GeminiModel("gemini-2.5-flash", api_key="test-key", client=client), bodies


async def test_an_approval_for_turn_one_cannot_resume_turn_two_on_gemini() -> None:
    confirm = nba.define_interrupt(
        name="confirm", description="Ask", input_schema=Confirm, output_schema=Reply
    )
    model, _ = gemini_turns()
    agent = nba.define_agent("g", model=model, tools=[confirm], store=nba.InMemorySessionStore())
    chat = agent.chat()
    first = await chat.send("clean up the test folder")
    old_answer = first.interrupts[0].respond({"yes": True})
    await chat.resume(respond=[old_answer])
    second = await chat.send("now the database")
    (ask,) = second.interrupts
    assert ask.input == {"question": "Delete the PRODUCTION database?"}
    assert ask.ref != first.interrupts[0].ref  # minted refs do not repeat
    with pytest.raises(nba.AgentError, match="earlier turn") as info:
        await chat.resume(respond=[old_answer])
    assert info.value.status == "INVALID_ARGUMENT"
    # a Genkit-shaped answer (no digest) naming turn 1's ref is refused the same way
    plain = nba.Part(
        tool_response=nba.ToolResponse(name="confirm", ref=first.interrupts[0].ref, output={"yes": True})
    )
    with pytest.raises(nba.AgentError, match="earlier turn"):
        await chat.resume(respond=[plain])
    done = await chat.resume(respond=[ask.respond({"yes": False})])
    assert done.text == "ok"


async def test_an_answer_built_for_another_pause_of_the_same_ref_is_refused() -> None:
    """Refs that repeat anyway (a model that reuses them): the answer's digest tells the pauses apart."""
    confirm = nba.define_interrupt(
        name="confirm", description="Ask", input_schema=Confirm, output_schema=Reply
    )
    model = ScriptedModel(
        [
            tool_call_response(("confirm", "c", {"question": "Delete the test folder?"})),
            text_response("ok"),
            tool_call_response(("confirm", "c", {"question": "Delete the PRODUCTION database?"})),
            text_response("ok"),
        ]
    )
    agent = nba.define_agent("r", model=model, tools=[confirm], store=nba.InMemorySessionStore())
    chat = agent.chat()
    first = await chat.send("a")
    old_answer = first.interrupts[0].respond({"yes": True})
    await chat.resume(respond=[old_answer])
    await chat.send("b")
    with pytest.raises(nba.AgentError, match="built for another pause") as info:
        await chat.resume(respond=[old_answer])
    assert info.value.status == "INVALID_ARGUMENT" and model.calls == 3


async def test_a_ref_that_occurs_twice_in_the_paused_message_cannot_be_answered() -> None:
    confirm = nba.define_interrupt(
        name="confirm", description="Ask", input_schema=Confirm, output_schema=Reply
    )
    model = ScriptedModel(
        [tool_call_response(("confirm", "c", {"question": "one?"}), ("confirm", "c", {"question": "two?"}))]
    )
    agent = nba.define_agent("d", model=model, tools=[confirm], store=nba.InMemorySessionStore())
    chat = agent.chat()
    res = await chat.send("a")
    with pytest.raises(nba.AgentError, match="two requests of tool 'confirm'"):
        await chat.resume(respond=[i.respond({"yes": True}) for i in res.interrupts[:1]])
