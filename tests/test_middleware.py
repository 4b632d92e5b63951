"""Middleware: ToolApproval holds and approvals, custom wrap_model / wrap_tool hooks."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import text_response, tool_call_response

import nb_agents as nba
from nb_agents.interrupts import interrupt_digest
from nb_agents.middleware import ApprovalHold, Middleware, ModelNext, ToolApproval, ToolNext
from nb_agents.testing import ScriptedModel

HOLD = {"message": "Tool not in approved list: transferMoney"}


class Bank:
    """Two tools that record every execution."""

    def __init__(self) -> None:
        self.ran: list[str] = []

        @nba.tool(name="getBalance")
        async def get_balance(account: str) -> float:
            self.ran.append("getBalance")
            return 900.0

        @nba.tool(name="transferMoney")
        async def transfer_money(amount: int) -> str:
            self.ran.append("transferMoney")
            return f"sent {amount}"

        self.tools = [get_balance, transfer_money]


@pytest.fixture(params=["store", "client"])
def store(request: pytest.FixtureRequest) -> nba.InMemorySessionStore | None:
    return nba.InMemorySessionStore() if request.param == "store" else None


def _setup(
    store: Any, *responses: dict[str, Any], allowed: list[str] | None = None
) -> tuple[nba.Agent, ScriptedModel, Bank]:
    bank = Bank()
    model = ScriptedModel(list(responses))
    gate = ToolApproval(allowed_tools=["getBalance"] if allowed is None else allowed)
    agent = nba.define_agent("bank", model=model, tools=bank.tools, store=store, use=[gate])
    return agent, model, bank


TRANSFER = tool_call_response(("transferMoney", "t1", {"amount": 500}))


def _last_tool_message(model: ScriptedModel) -> dict[str, Any]:
    msg = model.requests[-1].messages[-1]
    assert msg.role == "tool"
    return msg.to_wire()


# -- ToolApproval through the chat API -----------------------------------------------------


@pytest.mark.anyio
async def test_allowed_tool_runs(store: Any) -> None:
    agent, model, bank = _setup(
        store, tool_call_response(("getBalance", "b1", {"account": "chk"})), text_response("You have 900")
    )
    res = await agent.chat().send("balance?")
    assert res.finish_reason == "stop" and res.text == "You have 900"
    assert bank.ran == ["getBalance"]
    assert _last_tool_message(model)["content"][0]["toolResponse"]["output"] == 900.0


@pytest.mark.anyio
async def test_other_tool_is_held_and_not_run(store: Any) -> None:
    agent, model, bank = _setup(store, TRANSFER)
    res = await agent.chat().send("transfer")
    assert res.finish_reason == "interrupted"
    assert bank.ran == []
    (hold,) = res.interrupts
    assert (hold.name, hold.ref, hold.input) == ("transferMoney", "t1", {"amount": 500})
    assert hold.part.metadata is not None and hold.part.metadata["interrupt"] == HOLD
    assert hold.data == HOLD
    assert model.calls == 1


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["approve", "tool_approved", "toolApproved"])
async def test_approval_runs_the_tool_exactly_once(store: Any, how: str) -> None:
    agent, model, bank = _setup(store, TRANSFER, text_response("Done"))
    chat = agent.chat()
    res = await chat.send("transfer")
    hold = res.interrupts[0]
    part = hold.approve() if how == "approve" else hold.restart(resumed={how: True})
    res = await chat.resume(restart=[part])
    assert res.finish_reason == "stop" and res.text == "Done"
    assert bank.ran == ["transferMoney"]
    (resp,) = _last_tool_message(model)["content"]
    assert resp["toolResponse"] == {"name": "transferMoney", "ref": "t1", "output": "sent 500"}
    assert model.calls == 2


@pytest.mark.anyio
@pytest.mark.parametrize("resumed", [None, True, {"toolApproved": False}, {"approved": True}])
async def test_restart_without_approval_re_pauses(store: Any, resumed: Any) -> None:
    agent, model, bank = _setup(store, TRANSFER, text_response("never"))
    chat = agent.chat()
    res = await chat.send("transfer")
    res = await chat.resume(restart=[res.interrupts[0].restart(resumed=resumed)])
    assert res.finish_reason == "interrupted"
    assert bank.ran == []
    assert model.calls == 1
    (hold,) = res.interrupts
    assert hold.data == HOLD
    # the re-paused call can still be approved
    res = await chat.resume(restart=[hold.approve()])
    assert res.finish_reason == "stop" and bank.ran == ["transferMoney"]


@pytest.mark.anyio
async def test_deny_by_respond_never_runs_the_tool(store: Any) -> None:
    agent, model, bank = _setup(store, TRANSFER, text_response("OK, not sent"))
    chat = agent.chat()
    res = await chat.send("transfer")
    res = await chat.resume(respond=[res.interrupts[0].respond("denied: not today")])
    assert res.finish_reason == "stop" and res.text == "OK, not sent"
    assert bank.ran == []
    (resp,) = _last_tool_message(model)["content"]
    assert resp["toolResponse"] == {"name": "transferMoney", "ref": "t1", "output": "denied: not today"}


@pytest.mark.anyio
async def test_a_denial_is_not_held_to_the_tool_output_schema(store: Any) -> None:
    # the denied call never ran: the answer tells the model so, whatever the tool returns
    agent, model, bank = _setup(store, TRANSFER, text_response("OK, not sent"))
    chat = agent.chat()
    res = await chat.send("transfer")
    hold = res.interrupts[0]
    res = await chat.resume(respond=[hold.respond({"denied": True})])  # transferMoney returns a str
    assert res.finish_reason == "stop" and bank.ran == []
    outputs = [p["toolResponse"]["output"] for p in _last_tool_message(model)["content"]]
    assert outputs == [{"denied": True}]


@pytest.mark.anyio
async def test_allowed_and_held_in_one_round(store: Any) -> None:
    both = tool_call_response(
        ("getBalance", "b1", {"account": "chk"}), ("transferMoney", "t1", {"amount": 5})
    )
    agent, model, bank = _setup(store, both, text_response("both done"))
    chat = agent.chat()
    res = await chat.send("do both")
    assert res.finish_reason == "interrupted"
    assert bank.ran == ["getBalance"]
    assert [i.name for i in res.interrupts] == ["transferMoney"]
    res = await chat.resume(restart=[res.interrupts[0].approve()])
    assert res.finish_reason == "stop"
    assert bank.ran == ["getBalance", "transferMoney"]  # the allowed one did not run twice
    outputs = [p["toolResponse"]["output"] for p in _last_tool_message(model)["content"]]
    assert outputs == [900.0, "sent 5"]


@pytest.mark.anyio
async def test_empty_allowlist_gates_every_tool(store: Any) -> None:
    agent, _, bank = _setup(store, tool_call_response(("getBalance", "b1", {"account": "c"})), allowed=[])
    res = await agent.chat().send("balance?")
    assert res.finish_reason == "interrupted"
    assert res.interrupts[0].data == {"message": "Tool not in approved list: getBalance"}
    assert bank.ran == []


# -- ToolApproval.interrupted claims through the run API ---------------------------------------


def _continue(out: nba.AgentOutput) -> dict[str, Any]:
    return {"snapshot_id": out.snapshot_id} if out.snapshot_id else {"state": out.state}


def test_claim_is_none_for_an_ordinary_interrupt() -> None:
    ordinary = nba.Part.model_validate(
        {"toolRequest": {"name": "ask", "ref": "a", "input": {}}, "metadata": {"interrupt": {"q": "?"}}}
    )
    assert ToolApproval.interrupted(ordinary) is None
    bare = ordinary.with_metadata(interrupt=True)
    assert ToolApproval.interrupted(bare) is None
    assert ToolApproval.interrupted(nba.Part(text="x")) is None


@pytest.mark.anyio
async def test_claimed_hold_approve_via_run(store: Any) -> None:
    agent, model, bank = _setup(store, TRANSFER, text_response("Done"))
    out = await agent.run_text("transfer")
    assert out.finish_reason == "interrupted"
    (part,) = out.interrupts()
    hold = ToolApproval.interrupted(part)
    assert isinstance(hold, ApprovalHold)
    assert (hold.name, hold.ref, hold.input) == ("transferMoney", "t1", {"amount": 500})
    approve = hold.approve()
    assert approve.to_wire() == {
        "toolRequest": {"name": "transferMoney", "ref": "t1", "input": {"amount": 500}},
        "metadata": {"resumed": {"toolApproved": True}, "interruptDigest": interrupt_digest(hold.part)},
    }
    out = await agent.run(nba.AgentInput(resume=nba.ToolResume(restart=[approve])), **_continue(out))
    assert out.finish_reason == "stop", out.error
    assert bank.ran == ["transferMoney"]


@pytest.mark.anyio
async def test_resending_the_same_approval_does_not_run_the_tool_again() -> None:
    agent, model, bank = _setup(
        nba.InMemorySessionStore(), TRANSFER, text_response("Done"), text_response("x")
    )
    out = await agent.run_text("transfer")
    hold = ToolApproval.interrupted(out.interrupts()[0])
    assert hold is not None
    resume = nba.AgentInput(resume=nba.ToolResume(restart=[hold.approve()]))
    first = await agent.run(resume, snapshot_id=out.snapshot_id)
    again = await agent.run(resume, snapshot_id=out.snapshot_id)  # a double click
    assert first.finish_reason == again.finish_reason == "stop"
    assert again.snapshot_id == first.snapshot_id
    assert bank.ran == ["transferMoney"] and model.calls == 2


@pytest.mark.anyio
async def test_claimed_hold_deny_via_run(store: Any) -> None:
    agent, model, bank = _setup(store, TRANSFER, text_response("Not sent"))
    out = await agent.run_text("transfer")
    hold = ToolApproval.interrupted(out.interrupts()[0])
    assert hold is not None
    deny = hold.deny("refused")
    assert deny.to_wire()["toolResponse"] == {"name": "transferMoney", "ref": "t1", "output": "refused"}
    out = await agent.run(nba.AgentInput(resume=nba.ToolResume(respond=[deny])), **_continue(out))
    assert out.finish_reason == "stop", out.error
    assert bank.ran == []
    (resp,) = _last_tool_message(model)["content"]
    assert resp["toolResponse"]["output"] == "refused"


@pytest.mark.anyio
async def test_default_deny_is_accepted_for_a_typed_tool(store: Any) -> None:
    agent, _, bank = _setup(store, TRANSFER, text_response("Not sent"))
    out = await agent.run_text("transfer")
    hold = ToolApproval.interrupted(out.interrupts()[0])
    assert hold is not None
    out = await agent.run(nba.AgentInput(resume=nba.ToolResume(respond=[hold.deny()])), **_continue(out))
    assert out.finish_reason == "stop", out.error
    assert bank.ran == []


# -- custom middleware ------------------------------------------------------------------------


class Shout(Middleware):
    def __init__(self) -> None:
        self.requests: list[nba.GenerateRequest] = []

    async def wrap_model(self, request: nba.GenerateRequest, call_next: ModelNext) -> nba.GenerateResponse:
        self.requests.append(request)
        response = await call_next(request)
        msg = response.resolved_message()
        assert msg is not None
        loud = [p.model_copy(update={"text": p.text.upper()}) if p.text else p for p in msg.content]
        return response.model_copy(update={"message": msg.model_copy(update={"content": loud})})


@pytest.mark.anyio
async def test_wrap_model_sees_each_request_and_can_alter_the_response() -> None:
    bank = Bank()
    model = ScriptedModel(
        [tool_call_response(("getBalance", "b1", {"account": "c"}), text="checking"), text_response("quiet")]
    )
    shout = Shout()
    agent = nba.define_agent("loud", model=model, system="Be brief.", tools=bank.tools, use=[shout])
    out = await agent.run_text("balance?")
    assert out.finish_reason == "stop"
    assert out.message is not None and out.message.text == "QUIET"
    assert len(shout.requests) == 2
    assert all(isinstance(r, nba.GenerateRequest) for r in shout.requests)
    assert shout.requests[0].messages[-1].text == "balance?"
    assert {t.name for t in shout.requests[0].tools} == {"getBalance", "transferMoney"}
    assert shout.requests[1].messages[-1].role == "tool"
    assert out.state is not None
    assert out.state.messages[1].content[0].text == "CHECKING"  # the altered message is what is kept


class Trace(Middleware):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    async def wrap_tool(self, input: Any, ctx: nba.ToolContext, call_next: ToolNext) -> Any:
        self.log.append(f"{self.name}>{ctx.name}")
        out = await call_next(input, ctx)
        self.log.append(f"{self.name}<{ctx.name}")
        return f"{self.name}({out})"


@pytest.mark.anyio
async def test_wrap_tool_order_first_is_outermost() -> None:
    bank = Bank()
    log: list[str] = []
    model = ScriptedModel([tool_call_response(("transferMoney", "t1", {"amount": 1})), text_response("ok")])
    agent = nba.define_agent(
        "traced", model=model, tools=bank.tools, use=[Trace("outer", log), Trace("inner", log)]
    )
    out = await agent.run_text("go")
    assert out.finish_reason == "stop"
    assert log == ["outer>transferMoney", "inner>transferMoney", "inner<transferMoney", "outer<transferMoney"]
    assert _last_tool_message(model)["content"][0]["toolResponse"]["output"] == "outer(inner(sent 1))"


@pytest.mark.anyio
async def test_a_held_call_reaches_no_middleware_until_a_person_approves_it() -> None:
    """The decision comes before every middleware: a held call is not seen by one (none can
    approve it), and once approved it runs through the whole chain."""
    bank = Bank()
    log: list[str] = []
    model = ScriptedModel([TRANSFER, text_response("ok")])
    agent = nba.define_agent(
        "gated", model=model, tools=bank.tools, use=[Trace("outer", log), ToolApproval(allowed_tools=[])]
    )
    out = await agent.run_text("go")
    assert out.finish_reason == "interrupted"
    assert log == [] and bank.ran == []
    hold = ToolApproval.interrupted(out.message.interrupts()[0])  # type: ignore[union-attr]
    assert hold is not None
    done = await agent.run(nba.AgentInput(resume=nba.ToolResume(restart=[hold.approve()])), state=out.state)
    assert done.finish_reason == "stop"
    assert log == ["outer>transferMoney", "outer<transferMoney"] and len(bank.ran) == 1
