"""Tools: schemas from hints, threads, Interrupt, ToolFail, failures and typed claims."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from helpers import text_response, tool_call_response
from pydantic import BaseModel

import nb_agents as nba
from nb_agents.interrupts import interrupt_digest
from nb_agents.testing import ScriptedModel


class TransferInput(BaseModel):
    amount: int
    to: str


class ApprovalAsk(BaseModel):
    details: str


class ApprovalReply(BaseModel):
    approved: bool


def _agent(model: ScriptedModel, *tools: nba.Tool, store: Any = None) -> nba.Agent:
    return nba.define_agent("t", model=model, tools=list(tools), store=store)


def _tool_message(model: ScriptedModel, call: int) -> dict[str, Any]:
    """The tool message the model saw on call `call` (its last message)."""
    msg = model.requests[call].messages[-1]
    assert msg.role == "tool"
    return msg.to_wire()


# -- schemas ------------------------------------------------------------------------------


def test_plain_params_become_an_object_schema() -> None:
    @nba.tool(name="getBalance")
    async def get_balance(account: str, limit: int = 5) -> float:
        """The balance of an account."""
        return 1.0

    schema = get_balance.definition().input_schema
    assert schema["type"] == "object"
    assert set(schema["properties"]) == {"account", "limit"}
    assert schema["properties"]["account"]["type"] == "string"
    assert schema["properties"]["limit"]["type"] == "integer"
    assert schema["required"] == ["account"]
    assert get_balance.name == "getBalance"
    assert get_balance.description == "The balance of an account."
    assert get_balance.definition().description == "The balance of an account."
    assert get_balance.definition().output_schema == {"type": "number"}


def test_single_model_param_uses_that_models_schema() -> None:
    @nba.tool
    def transfer_money(inp: TransferInput) -> str:
        """Move money.

        Between accounts.
        """
        return "ok"

    assert transfer_money.name == "transfer_money"
    assert transfer_money.input_schema == TransferInput.model_json_schema()
    assert transfer_money.description == "Move money.\n\nBetween accounts."


def test_description_argument_overrides_docstring_and_ctx_is_not_in_schema() -> None:
    @nba.tool(description="Explicit.")
    async def look(q: str, ctx: nba.ToolContext) -> str:
        """Docstring."""
        return q

    assert look.description == "Explicit."
    assert set(look.input_schema["properties"]) == {"q"}


# -- where tools run ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_sync_tool_runs_in_a_worker_thread_and_async_on_the_loop() -> None:
    seen: dict[str, threading.Thread] = {}

    @nba.tool
    def sync_tool(x: int) -> int:
        seen["sync"] = threading.current_thread()
        return x + 1

    @nba.tool
    async def async_tool(x: int) -> int:
        seen["async"] = threading.current_thread()
        return x * 2

    model = ScriptedModel(
        [tool_call_response(("sync_tool", "s", {"x": 1}), ("async_tool", "a", {"x": 4})), text_response("ok")]
    )
    out = await _agent(model, sync_tool, async_tool).run_text("go")
    assert out.finish_reason == "stop"
    loop_thread = threading.current_thread()
    assert seen["async"] is loop_thread
    assert seen["sync"] is not loop_thread
    outputs = [p["toolResponse"]["output"] for p in _tool_message(model, 1)["content"]]
    assert outputs == [2, 8]


# -- Interrupt data -------------------------------------------------------------------------


def test_interrupt_accepts_dict_model_or_none() -> None:
    assert nba.Interrupt({"a": 1}).data == {"a": 1}
    assert nba.Interrupt(ApprovalAsk(details="d")).data == {"details": "d"}
    assert nba.Interrupt(None).data is None
    assert nba.Interrupt().data is None


@pytest.mark.parametrize(("bad", "type_name"), [([1, 2], "list"), ("ask", "str"), (3, "int")])
def test_interrupt_rejects_non_objects_naming_the_type(bad: Any, type_name: str) -> None:
    with pytest.raises(TypeError) as info:
        nba.Interrupt(bad)
    message = str(info.value)
    assert type_name in message
    assert "JSON object" in message


# -- define_interrupt -----------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("request_metadata", "expected"),
    [
        (None, True),
        ({"message": "ask a human"}, {"message": "ask a human"}),
        (lambda inp: {"about": inp["details"]}, {"about": "$500"}),
    ],
)
async def test_define_interrupt_always_pauses(request_metadata: Any, expected: Any) -> None:
    ask = nba.define_interrupt(
        name="userApproval",
        description="Ask the user.",
        input_schema=ApprovalAsk,
        output_schema=ApprovalReply,
        request_metadata=request_metadata,
    )
    assert ask.kind == "interrupt"
    assert ask.input_schema == ApprovalAsk.model_json_schema()
    model = ScriptedModel([tool_call_response(("userApproval", "u1", {"details": "$500"}))])
    out = await _agent(model, ask).run_text("transfer")
    assert out.finish_reason == "interrupted"
    assert out.message is not None
    (part,) = out.message.interrupts()
    assert part.metadata == {"interrupt": expected}
    assert part.tool_request.input == {"details": "$500"}
    assert model.calls == 1


# -- resumable_tool -------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [str, int, list[str]])
def test_resumable_tool_rejects_a_non_object_resume_type(bad: Any) -> None:
    with pytest.raises(TypeError, match="pydantic model or a dict"):
        nba.resumable_tool(name="x", resume=bad)


def test_resumable_tool_accepts_model_or_dict_resume_types() -> None:
    for ok in (ApprovalReply, dict, dict[str, Any]):
        deco = nba.resumable_tool(name="x", resume=ok)

        async def f(inp: TransferInput, reply: Any) -> str:
            return "ok"

        assert deco(f).kind == "resumable"


def test_resumable_tool_needs_a_reply_param() -> None:
    async def no_reply(inp: TransferInput) -> str:
        return "ok"

    with pytest.raises(TypeError, match="reply"):
        nba.resumable_tool(name="noReply", resume=ApprovalReply)(no_reply)


# -- ToolContext on first call and on restart ------------------------------------------------


@pytest.mark.anyio
async def test_tool_context_first_call_then_restarts() -> None:
    calls: list[tuple[Any, Any, Any]] = []

    @nba.resumable_tool(name="transferMoney", resume=ApprovalReply)
    async def transfer(inp: TransferInput, reply: ApprovalReply | None, ctx: nba.ToolContext) -> str:
        calls.append((inp.amount, ctx.resumed, ctx.original_input))
        if reply is None:
            raise nba.Interrupt(ApprovalAsk(details=f"send {inp.amount}"))
        return f"sent {inp.amount}" if reply.approved else "declined"

    orig = {"amount": 500, "to": "savings"}
    model = ScriptedModel([tool_call_response(("transferMoney", "t1", orig)), text_response("done")])
    agent = _agent(model, transfer, store=nba.InMemorySessionStore())
    out = await agent.run_text("transfer")
    assert out.finish_reason == "interrupted"
    assert calls == [(500, None, orig)]
    (part,) = out.interrupts()
    assert nba.interrupt_as(part, ApprovalAsk) == ApprovalAsk(details="send 500")

    call = transfer.interrupted(part)
    assert call is not None
    restart = call.restart_with_input(TransferInput(amount=50, to="savings"), ApprovalReply(approved=True))
    out2 = await agent.run(
        nba.AgentInput(resume=nba.ToolResume(restart=[restart])), snapshot_id=out.snapshot_id
    )
    assert out2.finish_reason == "stop", out2.error
    assert calls[1] == (50, {"approved": True}, orig)
    assert _tool_message(model, 1)["content"][0]["toolResponse"]["output"] == "sent 50"


# -- ToolFail and failures -------------------------------------------------------------------


@pytest.mark.anyio
async def test_tool_fail_is_shown_to_the_model_and_the_turn_goes_on() -> None:
    @nba.tool(name="lookup")
    async def lookup(q: str) -> str:
        raise nba.ToolFail(f"no such account: {q}")

    model = ScriptedModel([tool_call_response(("lookup", "l1", {"q": "x9"})), text_response("sorry")])
    out = await _agent(model, lookup).run_text("balance?")
    assert out.finish_reason == "stop"
    assert out.message is not None and out.message.text == "sorry"
    assert model.calls == 2
    (resp,) = _tool_message(model, 1)["content"]
    assert resp["toolResponse"] == {"name": "lookup", "ref": "l1", "output": {"error": "no such account: x9"}}


def _explode_deep_inside(q: str) -> str:
    raise ValueError(f"kaboom {q}")


@pytest.mark.anyio
async def test_other_exceptions_fail_the_turn() -> None:
    @nba.tool(name="lookup")
    def lookup(q: str) -> str:
        return _explode_deep_inside(q)

    def script() -> ScriptedModel:
        return ScriptedModel([tool_call_response(("lookup", "l1", {"q": "x9"})), text_response("never")])

    model = script()
    out = await _agent(model, lookup).run_text("balance?")
    assert out.finish_reason == "failed"
    assert out.error is not None and out.error.status == "INTERNAL"
    assert "lookup" in out.error.message
    assert "ValueError" in out.error.message and "kaboom x9" in out.error.message
    assert "_explode_deep_inside" in out.error.details["traceback"]
    assert model.calls == 1

    with pytest.raises(nba.AgentError) as info:  # the chat API raises instead
        await _agent(script(), lookup).chat().send("balance?")
    assert info.value.status == "INTERNAL"
    assert "kaboom" in str(info.value)


# -- claims -----------------------------------------------------------------------------------


def _interrupted_part(name: str, ref: str | None, inp: Any, data: Any = True) -> nba.Part:
    return nba.Part.model_validate(
        {"toolRequest": {"name": name, "ref": ref, "input": inp}, "metadata": {"interrupt": data}}
    )


@nba.resumable_tool(name="transferMoney", resume=ApprovalReply)
async def transfer_money(inp: TransferInput, reply: ApprovalReply | None) -> str:
    if reply is None:
        raise nba.Interrupt({"details": "?"})
    return "ok"


ORIG = {"amount": 500, "to": "savings"}
PART = _interrupted_part("transferMoney", "t1", ORIG, {"details": "Transfer $500"})


def test_claim_returns_none_for_other_parts() -> None:
    assert transfer_money.interrupted(_interrupted_part("other", "t1", ORIG)) is None
    plain = nba.Part.model_validate({"toolRequest": {"name": "transferMoney", "ref": "t1", "input": ORIG}})
    assert transfer_money.interrupted(plain) is None
    assert transfer_money.interrupted(nba.Part(text="hi")) is None


def test_claim_decodes_input() -> None:
    call = transfer_money.interrupted(PART)
    assert call is not None
    assert isinstance(call.input, TransferInput) and call.input == TransferInput(amount=500, to="savings")
    assert (call.name, call.ref, call.data) == ("transferMoney", "t1", {"details": "Transfer $500"})


def test_claim_builders_make_the_wire_parts() -> None:
    call = transfer_money.interrupted(PART)
    assert call is not None
    request = {"name": "transferMoney", "ref": "t1", "input": ORIG}
    bound = interrupt_digest(PART)  # every answer names the pause it answers
    assert call.restart(ApprovalReply(approved=True)).to_wire() == {
        "toolRequest": request,
        "metadata": {"resumed": {"approved": True}, "interruptDigest": bound},
    }
    new = {"amount": 50, "to": "savings"}
    assert call.restart_with_input(TransferInput(**new), ApprovalReply(approved=False)).to_wire() == {
        "toolRequest": {**request, "input": new},
        "metadata": {"resumed": {"approved": False}, "replacedInput": ORIG, "interruptDigest": bound},
    }
    assert call.respond("sent by hand").to_wire() == {
        "toolResponse": {"name": "transferMoney", "ref": "t1", "output": "sent by hand"},
        "metadata": {"interruptResponse": True, "interruptDigest": bound},
    }
    assert call.approve().to_wire() == {
        "toolRequest": request,
        "metadata": {"resumed": {"toolApproved": True}, "interruptDigest": bound},
    }
    assert PART.metadata == {"interrupt": {"details": "Transfer $500"}}  # builders do not mutate


def test_interrupt_as() -> None:
    assert nba.interrupt_as(PART, ApprovalAsk) == ApprovalAsk(details="Transfer $500")
    not_interrupt = nba.Part.model_validate({"toolRequest": {"name": "x", "input": {}}})
    assert nba.interrupt_as(not_interrupt, ApprovalAsk) is None
    assert nba.interrupt_as(nba.Part(text="x"), ApprovalAsk) is None
    assert nba.interrupt_as(_interrupted_part("x", None, {}, {"other": 1}), ApprovalAsk) is None
    assert nba.interrupt_as(_interrupted_part("x", None, {}, {"details": 3}), ApprovalAsk) is None


@pytest.mark.anyio
async def test_tool_context_on_a_plain_restart_through_chat() -> None:
    seen: list[tuple[Any, Any]] = []

    @nba.tool(name="deleteFile")
    async def delete_file(path: str, ctx: nba.ToolContext) -> str:
        seen.append((ctx.resumed, ctx.original_input))
        if not ctx.resumed:
            ctx.interrupt({"question": f"Delete {path}?"})
        return "deleted"

    model = ScriptedModel([tool_call_response(("deleteFile", "d1", {"path": "/tmp/a"})), text_response("ok")])
    chat = _agent(model, delete_file).chat()
    res = await chat.send("clean up")
    assert res.finish_reason == "interrupted"
    assert res.interrupts[0].data == {"question": "Delete /tmp/a?"}
    res = await chat.resume(restart=[res.interrupts[0].restart(resumed={"yes": True})])
    assert res.finish_reason == "stop"
    assert seen == [(None, {"path": "/tmp/a"}), ({"yes": True}, {"path": "/tmp/a"})]
