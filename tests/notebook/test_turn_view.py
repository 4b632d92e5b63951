"""TurnView and its forms: clicks build the API's parts, resume once, show what follows."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any, Literal

import pytest
from helpers import text_response, tool_call_response
from pydantic import BaseModel, Field
from widget_helpers import control, html_of, wire

import nb_agents as nba
from nb_agents.chat import Chat
from nb_agents.middleware import ToolApproval
from nb_agents.notebook import TurnView
from nb_agents.testing import FunctionModel, ScriptedModel

pytestmark = pytest.mark.anyio


class Ask(BaseModel):
    question: str


class Reply(BaseModel):
    approved: bool
    feedback: str | None = None


class Quote(BaseModel):
    price: float = Field(gt=0)
    currency: Literal["EUR", "USD"] = "EUR"
    note: str | None = None


class Transfer(BaseModel):
    to: str
    amount: float = Field(gt=0)


class Pin(BaseModel):
    pin: int = Field(ge=1000, le=9999)


ask_user = nba.define_interrupt(name="askUser", input_schema=Ask, output_schema=Reply)
get_quote = nba.define_interrupt(name="getQuote", input_schema=Ask, output_schema=Quote)


def make(
    *responses: dict[str, Any], gate: bool = False, stream: Any = None
) -> tuple[nba.Agent, ScriptedModel, list[Any]]:
    ran: list[Any] = []

    @nba.resumable_tool(name="transfer", resume=Reply)
    async def transfer(inp: Transfer, reply: Reply | None) -> str:
        if reply is None:
            raise nba.Interrupt({"confirm": f"send {inp.amount} to {inp.to}"})
        ran.append(("transfer", inp.to, inp.amount, reply.approved))
        return "sent" if reply.approved else "cancelled"

    @nba.resumable_tool(name="unlock", resume=Pin)
    async def unlock(door: str, reply: Pin | None) -> str:
        if reply is None or reply.pin != 1234:
            raise nba.Interrupt({"door": door, "retry": reply is not None})
        ran.append(("unlock", door, reply.pin))
        return "open"

    @nba.tool(name="deleteFile")
    async def delete_file(path: str, ctx: nba.ToolContext) -> dict[str, str]:
        if not ctx.resumed:
            ctx.interrupt({"confirm": path})
        ran.append(("delete", path))
        return {"deleted": path}

    @nba.tool(name="payBill")
    async def pay_bill(amount: int) -> str:
        if amount > 100:
            raise RuntimeError("kaboom: the bank is closed")
        ran.append(("pay", amount))
        return "paid"

    model = ScriptedModel(list(responses), stream_chunks=stream)
    agent = nba.define_agent(
        "bank",
        model=model,
        tools=[ask_user, get_quote, transfer, unlock, delete_file, pay_bill],
        store=nba.InMemorySessionStore(),
        use=[ToolApproval(allowed_tools=["askUser", "getQuote", "transfer", "unlock", "deleteFile"])]
        if gate
        else [],
    )
    return agent, model, ran


async def paused(agent: nba.Agent) -> tuple[TurnView, nba.AgentResponse]:
    res = await agent.chat().send("go")
    assert res.finish_reason == "interrupted", res.error
    return TurnView(res), res


ASK = tool_call_response(("askUser", "a1", {"question": "Transfer $500?"}))


async def test_approve_builds_the_api_part_resumes_and_shows_the_continuation() -> None:
    agent, model, _ = make(ASK, text_response("Approved, done."))
    view, res = await paused(agent)
    form = view.forms[0]
    assert form.mode == "approve-respond" and form.submit_button is None
    form.approve_button.click()
    assert view.task is not None and form.approve_button.disabled
    done = await view.task
    assert done is not None and done.text == "Approved, done."
    assert view.last_resume is not None
    assert wire(view.last_resume.respond) == wire([res.interrupts[0].respond(Reply(approved=True))])
    assert view.last_resume.restart == []
    assert "Approved, done." in html_of(view.continuation)
    assert model.calls == 2
    form.approve_button.click()  # a stale click on a frozen form sends nothing
    form.deny_button.click()
    assert model.calls == 2 and view.task.done()


async def test_the_continuation_streams_into_the_view() -> None:
    chunks = [[], [{"content": [{"text": "Approved, "}]}, {"content": [{"text": "done."}]}]]
    agent, _, _ = make(ASK, text_response("Approved, done."), stream=chunks)
    view, _ = await paused(agent)
    seen: list[str] = []
    view.stream.observe(lambda change: seen.append(change["new"]), names="value")
    view.forms[0].approve_button.click()
    await view.task
    assert any("Approved," in s and "done." not in s for s in seen)  # text appended as it arrived
    assert "Approved, done." in seen[-1]


async def test_deny_with_feedback() -> None:
    agent, model, _ = make(ASK, text_response("Cancelled."))
    view, res = await paused(agent)
    form = view.forms[0]
    control(form.reply.widget, "Reason").value = "too much"
    form.deny_button.click()
    await view.task
    expected = res.interrupts[0].respond(Reply(approved=False, feedback="too much"))
    assert wire(view.last_resume.respond) == wire([expected])
    tool_msg = model.requests[1].messages[-1]
    assert tool_msg.content[0].tool_response.output == {"approved": False, "feedback": "too much"}


async def test_respond_form_with_typed_fields() -> None:
    agent, _, _ = make(tool_call_response(("getQuote", "q1", {"question": "price?"})), text_response("ok"))
    view, res = await paused(agent)
    form = view.forms[0]
    assert form.mode == "respond"
    control(form.reply.widget, "Price").value = 12.5
    control(form.reply.widget, "Currency").value = "USD"
    form.submit_button.click()
    await view.task
    expected = res.interrupts[0].respond(Quote(price=12.5, currency="USD"))
    assert wire(view.last_resume.respond) == wire([expected])


async def test_invalid_values_show_an_error_and_send_nothing() -> None:
    agent, model, _ = make(
        tool_call_response(("getQuote", "q1", {"question": "price?"})), text_response("ok")
    )
    view, _ = await paused(agent)
    form = view.forms[0]
    control(form.reply.widget, "Price").value = -1
    form.submit_button.click()
    assert "price" in form.error.value and "greater than 0" in form.error.value
    assert form.answer is None and view.task is None and model.calls == 1
    assert not form.submit_button.disabled
    control(form.reply.widget, "Price").value = 3
    form.submit_button.click()
    assert (await view.task) is not None and model.calls == 2
    assert form.error.value == ""


async def test_restart_form_from_the_resume_type() -> None:
    agent, _, ran = make(tool_call_response(("unlock", "u1", {"door": "front"})), text_response("open!"))
    view, res = await paused(agent)
    form = view.forms[0]
    assert form.mode == "restart"
    control(form.reply.widget, "Pin").value = 12  # out of bounds: the resume type says no
    form.submit_button.click()
    assert "pin" in form.error.value and view.task is None and ran == []
    control(form.reply.widget, "Pin").value = 1234
    form.submit_button.click()
    await view.task
    assert wire(view.last_resume.restart) == wire([res.interrupts[0].restart(resumed=Pin(pin=1234))])
    assert ran == [("unlock", "front", 1234)]


async def test_a_restarted_tool_that_pauses_again_shows_a_new_form() -> None:
    agent, model, ran = make(tool_call_response(("unlock", "u1", {"door": "front"})), text_response("open!"))
    view, _ = await paused(agent)
    control(view.forms[0].reply.widget, "Pin").value = 1111  # wrong: the tool pauses again
    view.forms[0].submit_button.click()
    again = await view.task
    assert again is not None and again.finish_reason == "interrupted" and model.calls == 1
    child = view.child
    assert (
        child is not None
        and len(child.forms) == 1
        and child.forms[0].interrupt.data
        == {
            "door": "front",
            "retry": True,
        }
    )
    assert view.forms[0].submit_button.disabled  # the old form stays frozen
    control(child.forms[0].reply.widget, "Pin").value = 1234
    child.forms[0].submit_button.click()
    await child.task
    assert ran == [("unlock", "front", 1234)] and "open!" in html_of(child.continuation)


async def test_the_model_pausing_again_shows_a_nested_view() -> None:
    second = tool_call_response(("askUser", "a2", {"question": "Really?"}))
    agent, _, _ = make(ASK, second, text_response("finally"))
    view, _ = await paused(agent)
    view.forms[0].approve_button.click()
    await view.task
    assert view.child is not None and view.child.forms[0].interrupt.ref == "a2"
    assert "Really?" in html_of(view.child)
    view.child.forms[0].approve_button.click()
    await view.child.task
    assert "finally" in html_of(view)


async def test_approve_with_edited_arguments() -> None:
    agent, _, ran = make(
        tool_call_response(("transfer", "t1", {"to": "bob", "amount": 500})), text_response("ok")
    )
    view, res = await paused(agent)
    form = view.forms[0]
    assert form.mode == "approve-restart"
    form.edit_toggle.value = True
    control(form.inputs.widget, "Amount").value = -5
    form.approve_button.click()
    assert "new input" in form.error.value and view.task is None and ran == []
    control(form.inputs.widget, "Amount").value = 250
    form.approve_button.click()
    await view.task
    expected = res.interrupts[0].restart(
        resumed=Reply(approved=True), replace_input=Transfer(to="bob", amount=250)
    )
    assert wire(view.last_resume.restart) == wire([expected])
    assert ran == [("transfer", "bob", 250.0, True)]


async def test_approve_without_editing_keeps_the_input() -> None:
    agent, _, ran = make(
        tool_call_response(("transfer", "t1", {"to": "bob", "amount": 500})), text_response("ok")
    )
    view, res = await paused(agent)
    view.forms[0].edit_toggle.value = True  # opened but unchanged: no replacedInput
    view.forms[0].approve_button.click()
    await view.task
    assert wire(view.last_resume.restart) == wire([res.interrupts[0].restart(resumed=Reply(approved=True))])
    assert ran == [("transfer", "bob", 500.0, True)]


PAY = tool_call_response(("payBill", "p1", {"amount": 5}))


@pytest.mark.parametrize("how", ["approve", "deny", "deny-with-reason", "edit"])
async def test_tool_approval_holds(how: str) -> None:
    agent, model, ran = make(PAY, text_response("ok"), gate=True)
    view, res = await paused(agent)
    form = view.forms[0]
    hold = ToolApproval.interrupted(res.interrupts[0].part)
    assert form.mode == "hold" and hold is not None
    if how == "approve":
        form.approve_button.click()
        expected, where, tool_ran = hold.approve(), "restart", [("pay", 5)]
    elif how == "edit":
        form.edit_toggle.value = True
        control(form.inputs.widget, "Amount").value = 3
        form.approve_button.click()
        expected = res.interrupts[0].restart({"toolApproved": True}, replace_input={"amount": 3})
        where, tool_ran = "restart", [("pay", 3)]
    else:
        if how == "deny-with-reason":
            control(form.reply.widget, "Reason").value = "not now"
        form.deny_button.click()
        output = {"error": "The user denied the call to 'payBill': not now"} if how != "deny" else None
        expected, where, tool_ran = hold.deny(output), "respond", []
    await view.task
    assert wire(getattr(view.last_resume, where)) == wire([expected])
    assert ran == tool_ran and model.calls == 2


async def test_plain_tool_continue() -> None:
    agent, _, ran = make(tool_call_response(("deleteFile", "d1", {"path": "/tmp/x"})), text_response("ok"))
    view, res = await paused(agent)
    form = view.forms[0]
    assert form.mode == "continue"
    form.continue_button.click()
    await view.task
    assert wire(view.last_resume.restart) == wire([res.interrupts[0].restart(resumed=True)])
    assert ran == [("delete", "/tmp/x")]


async def test_plain_tool_answer_instead() -> None:
    agent, model, ran = make(
        tool_call_response(("deleteFile", "d1", {"path": "/tmp/x"})), text_response("ok")
    )
    view, res = await paused(agent)
    form = view.forms[0]
    form.answer_toggle.value = True
    form.reply.widget.value = '{"deleted": "nothing, the user said no"}'
    form.submit_button.click()
    await view.task
    expected = res.interrupts[0].respond({"deleted": "nothing, the user said no"})
    assert wire(view.last_resume.respond) == wire([expected]) and ran == []
    assert model.requests[1].messages[-1].content[0].tool_response.output == {
        "deleted": "nothing, the user said no"
    }


async def test_two_interrupts_each_answered_on_its_own_and_the_turn_resumes_after_the_last() -> None:
    both = tool_call_response(
        ("askUser", "a1", {"question": "ok?"}), ("transfer", "t1", {"to": "amy", "amount": 9})
    )
    agent, model, ran = make(both, text_response("both done"))
    view, res = await paused(agent)
    assert view.partial and "the turn resumes when the last is answered" in view.header.value
    first, second = view.forms
    second.approve_button.click()  # sent at once, alone: the transfer runs now
    first_sent = await view.task
    assert first_sent is not None and first_sent.finish_reason == "interrupted"
    assert ran == [("transfer", "amy", 9.0, True)] and model.calls == 1  # the model waits for the last
    assert "the turn resumes when the last is answered" in second.status.value
    assert second.locked and not first.locked and "1 of 2 answered" in view.header.value
    assert view.state == "waiting" and view.result is None
    first.deny_button.click()
    done = await view.task
    assert done is not None and done.text == "both done" and view.state == "done"
    assert model.calls == 2 and ran == [("transfer", "amy", 9.0, True)]
    ask, move = res.interrupts
    assert view.last_resume is not None
    assert wire(view.last_resume.respond) == wire([ask.respond(Reply(approved=False))])
    assert wire(view.last_resume.restart) == wire([move.restart(resumed=Reply(approved=True))])
    tool_msg = model.requests[1].messages[-1]
    assert [p.tool_response.name for p in tool_msg.content if p.tool_response] == ["askUser", "transfer"]
    assert len(await agent.audit(res.session_id or "")) == 2  # one record per answer


async def test_two_answers_sent_at_once_each_take_effect_once() -> None:
    both = tool_call_response(
        ("transfer", "t1", {"to": "amy", "amount": 9}), ("transfer", "t2", {"to": "bob", "amount": 5})
    )
    agent, model, ran = make(both, text_response("both sent"))
    view, _ = await paused(agent)
    view.forms[0].approve_button.click()
    one = view.task
    view.forms[1].approve_button.click()
    two = view.task
    assert one is not None and two is not None and one is not two
    results = [await one, await two]
    assert sorted(r.finish_reason for r in results if r is not None) == ["interrupted", "stop"]
    assert sorted(ran) == [("transfer", "amy", 9.0, True), ("transfer", "bob", 5.0, True)]
    assert model.calls == 2 and view.state == "done" and view.result is not None
    assert view.result.text == "both sent" and "both sent" in html_of(view)


async def test_a_partial_answer_given_elsewhere_too_takes_effect_once() -> None:
    both = tool_call_response(("askUser", "a1", {"question": "ok?"}), ("unlock", "u1", {"door": "front"}))
    agent, model, ran = make(both, text_response("done"))
    view, res = await paused(agent)
    ask, door = view.forms
    ask.approve_button.click()
    await view.task
    await agent.chat(snapshot_id=res.snapshot_id).resume(
        restart=[res.interrupts[1].restart(resumed={"pin": 1234})], partial=True
    )  # answered elsewhere meanwhile: the turn went on without this view
    assert ran == [("unlock", "front", 1234)] and model.calls == 2
    control(door.reply.widget, "Pin").value = 1234
    door.submit_button.click()
    done = await view.task  # the same answer: it replays the outcome recorded first
    assert done is not None and done.text == "done" and view.state == "done"
    assert ran == [("unlock", "front", 1234)] and model.calls == 2


async def test_a_form_cancelled_elsewhere_says_so_and_shows_no_ids() -> None:
    agent, model, ran = make(
        tool_call_response(("transfer", "t1", {"to": "amy", "amount": 9})), text_response("ok")
    )
    view, res = await paused(agent)
    await agent.chat(snapshot_id=res.snapshot_id).resume(
        respond=[res.interrupts[0].cancel("not now")], metadata={"answeredBy": "bob"}
    )  # cancelled in another cell meanwhile
    view.forms[0].approve_button.click()
    assert (await view.task) is None and view.state == "stale"
    assert view.outcome.startswith("Already answered (cancelled by bob at "), view.outcome
    assert res.snapshot_id not in html_of(view) and "already resumed" not in html_of(view)
    assert ran == [] and model.calls == 2


TWO_TRANSFERS = tool_call_response(
    ("transfer", "t1", {"to": "amy", "amount": 9}), ("transfer", "t2", {"to": "bob", "amount": 5})
)


async def lee_answers_bob(approved: bool) -> tuple[TurnView, ScriptedModel, list[Any]]:
    """Two transfers held; lee answers bob's in another cell before this view's form does."""
    agent, model, ran = make(TWO_TRANSFERS, text_response("done"))
    view, res = await paused(agent)
    await agent.chat(snapshot_id=res.snapshot_id).resume(
        restart=[res.interrupts[1].restart(resumed={"approved": approved})], partial=True,
        metadata={"answeredBy": "lee"},
    )  # fmt: skip
    return view, model, ran


async def test_a_call_answered_another_way_elsewhere_closes_its_form_and_the_turn_goes_on() -> None:
    view, model, ran = await lee_answers_bob(approved=False)
    amy, bob = view.forms
    bob.approve_button.click()
    assert (await view.task) is None and view.state == "waiting"
    assert bob.locked and bob.answer is None and bob.error.value == ""
    assert re.search(r"Already answered \(denied by lee at \d", html_of(bob)), html_of(bob)
    assert html_of(bob).count("Already answered") == 1
    assert "1 of 2 answered" in view.header.value and "already resumed" not in html_of(view)
    amy.approve_button.click()  # the last question: the turn goes on
    done = await view.task
    assert done is not None and done.text == "done" and view.state == "done"
    assert ran == [("transfer", "bob", 5.0, False), ("transfer", "amy", 9.0, True)] and model.calls == 2
    assert "transfer (bob): denied by lee at " in view.outcome and "transfer (amy) ran" in view.outcome
    assert re.search(r"Already answered \(denied by lee at \d", view.record_html())
    assert re.search(r"Already answered \(denied by lee at \d", view._static_bundle()["text/plain"])


async def test_a_recheck_closes_only_the_form_answered_elsewhere_and_the_rest_still_answer() -> None:
    """After the next cell (`watch.after_cell`), a form whose call lee answered says so before
    anyone clicks it; the other form still takes its answer, and the turn goes on once."""
    view, model, ran = await lee_answers_bob(approved=False)
    amy, bob = view.forms
    checking = view.recheck()
    assert checking is not None and (await checking) is False  # the turn still waits here, on amy
    assert view.state == "waiting" and bob.locked and bob.answer is None
    assert re.search(r"Already answered \(denied by lee at \d", html_of(bob)), html_of(bob)
    assert "1 of 2 answered" in view.header.value and not amy.locked
    assert (await view.recheck()) is False and html_of(bob).count("Already answered") == 1  # idempotent
    amy.approve_button.click()
    done = await view.task
    assert done is not None and done.text == "done" and view.state == "done"
    assert ran == [("transfer", "bob", 5.0, False), ("transfer", "amy", 9.0, True)] and model.calls == 2
    assert "transfer (bob): denied by lee at " in view.outcome and "transfer (amy) ran" in view.outcome


async def test_the_same_partial_answer_given_elsewhere_first_is_shown_as_theirs() -> None:
    view, model, ran = await lee_answers_bob(approved=True)
    bob = view.forms[1]
    bob.approve_button.click()  # the same answer: it replays, nothing runs again
    assert (await view.task) is not None and view.state == "waiting"
    assert re.search(r"Already answered \(approved by lee at \d", html_of(bob)), html_of(bob)
    assert "sent" not in html_of(bob) and "1 of 2 answered" in view.header.value
    assert ran == [("transfer", "bob", 5.0, True)] and model.calls == 1


async def test_a_tool_that_fails_after_approve_is_fixed_and_retried() -> None:
    """The answer took effect (the tool ran and failed): it is not answered again but retried (issue 11)."""
    agent, model, ran = make(
        tool_call_response(("payBill", "p1", {"amount": 500})), text_response("paid!"), gate=True
    )
    view, res = await paused(agent)
    view.forms[0].approve_button.click()
    assert (await view.task) is None
    assert "kaboom: the bank is closed" in view.status.value and view.state == "failed"
    assert view.retry_button.layout.display != "none" and ran == [] and model.calls == 1

    @nba.tool(name="payBill")
    async def pay_bill(amount: int) -> str:  # the fix, as a notebook user re-runs the cell
        ran.append(("pay", amount))
        return "paid"

    agent.update_tools(pay_bill)
    [turn] = await agent.pending()
    assert turn.status == "failed" and turn.attempt is not None  # listed with its status
    view.retry_button.click()
    done = await view.task
    assert done is not None and done.text == "paid!" and ran == [("pay", 500)]
    assert view.retry_button.layout.display == "none" and view.state == "done"
    kinds = [r.kind for r in await agent.audit(res.session_id)]  # type: ignore[arg-type]
    assert kinds == ["restart", "restart"]  # the answer, then its retry: two audited attempts
    assert await agent.pending() == []


class RemoteLike(nba.BaseAgent):
    """An agent known only through the protocol's three turn verbs (like a remote one): no tools."""

    def __init__(self, agent: nba.Agent) -> None:
        self.name = agent.name
        self._agent = agent

    async def invoke(self, inp: Any, init: Any, **kw: Any) -> Any:
        return await self._agent.invoke(inp, init, **kw)

    async def get_snapshot(
        self, snapshot_id: str | None = None, *, session_id: str | None = None, context: Any = None
    ) -> Any:
        return await self._agent.get_snapshot(snapshot_id, session_id=session_id)

    async def abort(self, snapshot_id: str, *, context: Any = None) -> str | None:
        return await self._agent.abort(snapshot_id)


async def test_without_schemas_json_areas_and_a_rejected_resume_can_be_answered_again() -> None:
    agent, model, _ = make(ASK, text_response("fine"))
    res = await Chat(RemoteLike(agent)).send("go")
    view = TurnView(res)
    form = view.forms[0]
    assert form.mode == "json" and form.tool is None
    form.reply.widget.value = "{approved: yes"
    form.submit_button.click()
    assert "not valid JSON" in form.error.value and view.task is None
    form.reply.widget.value = '{"approved": "perhaps"}'  # the server's schema rejects it
    form.submit_button.click()
    assert (await view.task) is None
    assert "INVALID_ARGUMENT" in view.status.value and "output validation failed" in view.status.value
    assert form.answer is None and not form.submit_button.disabled and model.calls == 1
    form.reply.widget.value = '{"approved": true}'
    form.submit_button.click()
    done = await view.task
    assert done is not None and done.text == "fine" and view.status.value == ""
    assert wire(view.last_resume.respond) == wire([res.interrupts[0].respond({"approved": True})])


async def test_json_restart_without_schemas() -> None:
    agent, _, ran = make(tool_call_response(("deleteFile", "d1", {"path": "/a"})), text_response("ok"))
    res = await Chat(RemoteLike(agent)).send("go")
    view = TurnView(res)
    view.forms[0].continue_button.click()  # "Restart" with no reply: resumed = true
    await view.task
    assert wire(view.last_resume.restart) == wire([res.interrupts[0].restart(resumed=True)])
    assert ran == [("delete", "/a")]


async def test_a_view_of_a_turn_the_chat_moved_past_resumes_that_turn() -> None:
    agent, _, _ = make(ASK, text_response("first"), text_response("second"))
    chat = agent.chat()
    res = await chat.send("go")
    old = TurnView(res)
    await chat.resume(respond=[res.interrupts[0].respond({"approved": True})])
    old.forms[0].approve_button.click()  # answered meanwhile: the form says so, nothing runs again
    assert (await old.task) is None and old.state == "stale" and "Already answered" in old.outcome


async def test_without_an_audit_the_identical_answer_returns_the_first_result() -> None:
    agent, _, _ = make(ASK, text_response("first"), text_response("second"))
    chat = Chat(RemoteLike(agent))  # a remote agent: no audit to read, exactly-once still holds
    res = await chat.send("go")
    old = TurnView(res)
    await chat.resume(respond=[res.interrupts[0].respond({"approved": True})])
    old.forms[0].reply.widget.value = '{"approved": true}'
    old.forms[0].submit_button.click()
    done = await old.task
    assert done is not None and done.text == "first"


async def test_a_chat_whose_question_was_answered_elsewhere_goes_on_from_that_answer() -> None:
    """kim answered in another cell: the form says so, and the chat it was given moves to where
    kim's answer went, so the next send carries kim's answer and the reply to it."""
    agent, model, _ = make(ASK, text_response("kim's answer is in"), text_response("next reply"))
    chat = agent.chat()
    res = await chat.send("go")
    view = TurnView(res, chat)
    kims = await agent.chat(snapshot_id=res.snapshot_id).resume(
        respond=[res.interrupts[0].respond({"approved": True})], metadata={"answeredBy": "kim"}
    )
    assert (await view.recheck()) is True and view.state == "stale"
    await view.following
    assert chat.snapshot_id == kims.snapshot_id and chat.messages[-1].text == "kim's answer is in"
    assert (await chat.send("next")).text == "next reply"
    sent = model.requests[-1].messages
    assert [m.role for m in sent] == ["user", "model", "tool", "model", "user"]
    assert sent[2].content[0].tool_response.output == {"approved": True}


async def test_a_chat_that_moved_on_before_the_answer_elsewhere_stays_where_it_went() -> None:
    agent, model, _ = make(ASK, text_response("forked"), text_response("kim's answer is in"))
    chat = agent.chat()
    res = await chat.send("go")
    view = TurnView(res, chat)
    moved = await chat.send("never mind")  # the person went on without answering
    await agent.chat(snapshot_id=res.snapshot_id).resume(
        respond=[res.interrupts[0].respond({"approved": True})], metadata={"answeredBy": "kim"}
    )
    assert (await view.recheck()) is True and view.following is None
    assert chat.snapshot_id == moved.snapshot_id and chat.messages[-1].text == "forked"


async def test_an_answer_elsewhere_that_paused_again_leaves_the_chat_at_the_new_question() -> None:
    agent, _, _ = make(ASK, ASK, text_response("done"))
    chat = agent.chat()
    res = await chat.send("go")
    view = TurnView(res, chat)
    again = await agent.chat(snapshot_id=res.snapshot_id).resume(
        respond=[res.interrupts[0].respond({"approved": True})], metadata={"answeredBy": "kim"}
    )
    assert again.finish_reason == "interrupted"
    assert (await view.recheck()) is True
    await view.following
    assert chat.snapshot_id == again.snapshot_id and chat.last is not None
    done = await chat.resume(respond=[chat.last.interrupts[0].respond({"approved": True})])
    assert done.text == "done"


async def test_an_answer_from_another_process_moves_the_chat_once_the_view_rechecks(tmp_path: Path) -> None:
    """Another process (a server, another kernel) answers the pause on the shared SQLite file:
    the view here reads the store's audit, and its chat goes on from that process's turn."""
    import proc_bank
    from procs import finish, run

    db, ledger, go = str(tmp_path / "bank.db"), tmp_path / "ledger.txt", tmp_path / "go"
    agent = proc_bank.build(db, str(ledger))
    chat = agent.chat()
    res = await chat.send("send 500")
    view = TurnView(res, chat)
    go.touch()
    reason, theirs = finish(run("proc_bank.py", "resume", db, str(ledger), str(go)))
    assert reason == "stop" and ledger.read_text().splitlines() == ["500"]
    assert (await view.recheck()) is True and view.state == "stale"
    await view.following
    assert chat.snapshot_id == theirs and chat.messages[-1].text == "transfer done"
    assert ledger.read_text().splitlines() == ["500"]  # following ran nothing


async def test_without_an_audit_a_form_another_answer_took_collapses_and_the_chat_follows() -> None:
    """A remote agent has no audit to read here: the refusal itself says another answer went
    first and where to. The form closes (no ids, no second try), and the chat goes on from there."""
    agent, model, _ = make(ASK, text_response("first"), text_response("second"))
    chat = Chat(RemoteLike(agent))
    res = await chat.send("go")
    view = TurnView(res, chat)
    await Chat(RemoteLike(agent), snapshot_id=res.snapshot_id).resume(
        respond=[res.interrupts[0].respond({"approved": False})]
    )  # answered in another tab meanwhile
    view.forms[0].reply.widget.value = '{"approved": true}'
    view.forms[0].submit_button.click()
    assert (await view.task) is None and view.state == "stale"
    assert view.outcome == "Already answered elsewhere"
    shown = html_of(view)
    assert res.snapshot_id not in shown and "already resumed" not in shown and '"approved": true' not in shown
    await view.following
    assert chat.messages[-1].text == "first" and model.calls == 2  # nothing ran again


async def test_a_form_taken_by_an_answer_whose_turn_still_runs_follows_it_once_it_ends() -> None:
    """lee's answer is claimed and its turn still runs when this form is sent: the claim refuses
    it and the audit has no record yet. The form closes at once; the chat follows when lee's
    turn has ended."""
    gate = asyncio.Event()

    async def model_fn(request: nba.GenerateRequest) -> object:
        if request.messages[-1].role == "tool":
            await gate.wait()
            return "lee's answer is in"
        return tool_call_response(("askUser", "a1", {"question": "Go?"}))

    agent = nba.define_agent(
        "helper", model=FunctionModel(model_fn), tools=[ask_user], store=nba.InMemorySessionStore()
    )
    chat = agent.chat()
    res = await chat.send("go")
    view = TurnView(res, chat)
    lee = asyncio.ensure_future(
        agent.chat(snapshot_id=res.snapshot_id).resume(
            respond=[res.interrupts[0].respond({"approved": False})], metadata={"answeredBy": "lee"}
        )
    )
    while (await agent.get_snapshot(session_id=res.session_id or "")).snapshot_id == res.snapshot_id:
        await asyncio.sleep(0.01)  # lee's claim is taken, with its turn's pending row
    view.forms[0].approve_button.click()
    assert (
        (await view.task) is None and view.state == "stale" and view.outcome == "Already answered elsewhere"
    )
    await asyncio.sleep(0.3)
    assert chat.snapshot_id == res.snapshot_id  # lee's turn still runs: nothing to follow yet
    gate.set()
    await lee
    await view.following
    assert chat.messages[-1].text == "lee's answer is in"
