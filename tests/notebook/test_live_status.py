"""What a person sees as a turn goes on: the status line, the record a finished turn leaves,
stale forms, the buttons each form offers, and the output replaced by the record."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers import text_response, tool_call_response
from pydantic import BaseModel, Field
from widget_helpers import control, html_of

import nb_agents as nba
from nb_agents.chat import Chat
from nb_agents.middleware import ToolApproval
from nb_agents.notebook import InterruptForm, TurnView, pending
from nb_agents.notebook._bundle import WIDGET_MIME
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio

TIME = r"\d{2}:\d{2}"


class Move(BaseModel):
    amount: float = Field(gt=0)
    toAccount: str


class Reply(BaseModel):
    approved: bool
    feedback: str | None = None


def bank(*responses: dict[str, Any], store: Any = None) -> tuple[nba.Agent, list[Any]]:
    ran: list[Any] = []

    @nba.resumable_tool(name="transferMoney", resume=Reply)
    async def transfer(inp: Move, reply: Reply | None) -> dict[str, Any]:
        """Move money between accounts."""
        if reply is None:
            raise nba.Interrupt({"details": f"Transfer ${inp.amount:,.2f} to {inp.toAccount}"})
        ran.append((inp.amount, reply.approved, reply.feedback))
        return {"ok": reply.approved}

    @nba.tool(name="deleteFile")
    async def delete_file(path: str, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt({"question": f"Delete {path}?"})
        ran.append(("deleted", path))
        return "deleted"

    @nba.tool(name="sendEmail")
    async def send_email(to: str) -> str:
        ran.append(("sent", to))
        return "sent"

    model = ScriptedModel(list(responses))
    agent = nba.define_agent(
        "bank",
        model=model,
        tools=[transfer, delete_file, send_email],
        store=store or nba.InMemorySessionStore(),
        use=[ToolApproval(allowed_tools=["transferMoney", "deleteFile"])],
    )
    return agent, ran


MOVE = tool_call_response(
    ("transferMoney", "t1", {"amount": 500, "toAccount": "savings"}), text="Please confirm."
)


async def test_the_status_line_says_who_approved_when_and_what_ran() -> None:
    agent, ran = bank(MOVE, text_response("Done: **moved**."))
    view = TurnView(await agent.chat().send("move it"), answered_by="ana")
    assert view.state == "waiting" and "Waiting for your answer" in view.header.value
    view.forms[0].approve_button.click()
    assert "Sending your answer" in view.header.value
    await view.task
    assert re.fullmatch(rf"Approved by ana at {TIME} · transferMoney ran", view.outcome), view.outcome
    assert view.state == "done" and view.settled and ran == [(500.0, True, None)]
    # the forms gave way to the record: the question, the answer, the reply (markdown)
    shown = html_of(view)
    assert "Approve" not in [getattr(w, "description", "") for w in view.children]
    assert "Transfer $500.00 to savings" in shown and "<strong>moved</strong>" in shown
    bundle = view._repr_mimebundle_()
    assert "Approved by ana at" in bundle["text/html"] and "Approved by ana at" in bundle["text/plain"]
    assert "Waiting" not in bundle["text/html"]


async def test_without_a_name_the_status_says_approved_at(monkeypatch: pytest.MonkeyPatch) -> None:
    agent, _ = bank(MOVE, text_response("ok"))
    view = TurnView(await agent.chat().send("move it"), answered_by="")  # nobody named
    view.forms[0].deny_button.click()
    await view.task
    assert re.fullmatch(rf"Denied at {TIME} · transferMoney was told no", view.outcome), view.outcome


async def test_approve_with_changes_relabels_the_button_and_shows_the_diff() -> None:
    agent, ran = bank(MOVE, text_response("ok"))
    view = TurnView(await agent.chat().send("move it"))
    form = view.forms[0]
    assert form.approve_button.description == "Approve"
    form.edit_toggle.value = True
    control(form.inputs.widget, "Amount").value = 250
    assert form.approve_button.description == "Approve with changes"
    assert "Your changes" in form.changes.value and "250" in form.changes.value
    control(form.inputs.widget, "Amount").value = 500  # back as it was: a plain approval again
    assert form.approve_button.description == "Approve" and form.changes.value == ""
    control(form.inputs.widget, "Amount").value = 250
    form.approve_button.click()
    await view.task
    assert ran == [(250.0, True, None)] and "ran with your changes" in view.outcome
    assert "Your changes" in view.record_html()


async def test_a_reason_beside_deny_reaches_the_model_and_the_record() -> None:
    agent, ran = bank(MOVE, text_response("ok"))
    view = TurnView(await agent.chat().send("move it"))
    form = view.forms[0]
    # the one text beside Deny is "Reason" wherever it comes from (here the schema's `feedback`)
    assert form.reason is not None and form.reason.widget.description == "Reason"
    form.reason.widget.value = "not today"
    form.deny_button.click()
    await view.task
    assert ran == [(500.0, False, "not today")] and "not today" in view.record_html()
    assert "Reason" in view.record_html() and "Feedback" not in view.record_html()


@pytest.mark.parametrize(
    ("call", "mode", "buttons"),
    [
        (
            ("transferMoney", "t1", {"amount": 5, "toAccount": "x"}),
            "approve-restart",
            ["approve", "deny", "cancel", "edit"],
        ),
        (("deleteFile", "d1", {"path": "/a"}), "continue", ["continue", "answer", "deny", "cancel", "edit"]),
        (("sendEmail", "e1", {"to": "a@b.c"}), "hold", ["approve", "always", "deny", "cancel", "edit"]),
    ],
)
async def test_every_form_that_lets_a_tool_run_offers_deny(call: Any, mode: str, buttons: list[str]) -> None:
    agent, _ = bank(tool_call_response(call))
    res = await agent.chat().send("go")
    form = InterruptForm(res.interrupts[0], agent.tools[call[0]])
    assert form.mode == mode and list(form.actions()) == buttons and form.deny_button is not None


async def test_a_plain_tool_that_paused_itself_can_be_denied_with_a_reason() -> None:
    agent, ran = bank(tool_call_response(("deleteFile", "d1", {"path": "/a"})), text_response("fine"))
    view = TurnView(await agent.chat().send("go"))  # the tool pauses itself with ctx.interrupt()
    form = view.forms[0]
    assert form.mode == "continue" and form.actions() == ("continue", "answer", "deny", "cancel", "edit")
    form.reason.widget.value = "keep it"
    form.deny_button.click()
    await view.task
    assert (
        view.last_resume.respond[0].tool_response.output
        == "The user denied the call to 'deleteFile': keep it"
    )
    assert ran == [] and "deleteFile did not run" in view.outcome


async def test_an_empty_required_answer_is_refused_beside_its_field() -> None:
    ask = nba.define_interrupt(name="askUser", input_schema=None, output_schema=str)
    model = ScriptedModel(
        [tool_call_response(("askUser", "q1", {"question": "Which one?"})), text_response("ok")]
    )
    agent = nba.define_agent("q", model=model, tools=[ask], store=nba.InMemorySessionStore())
    view = TurnView(await agent.chat().send("go"))
    form = view.forms[0]
    assert form.mode == "respond" and "Which one?" in form.head.value
    form.submit_button.click()
    assert view.task is None and model.calls == 1 and "required" in form.reply.error.value
    form.reply.widget.value = "the blue one"
    form.submit_button.click()
    await view.task
    assert view.last_resume.respond[0].tool_response.output == "the blue one" and form.reply.error.value == ""


async def test_a_stale_form_collapses_to_already_answered_with_who_and_when(tmp_path: Path) -> None:
    store = nba.SqliteSessionStore(tmp_path / "s.db")
    agent, ran = bank(MOVE, text_response("done"), store=store)
    await agent.chat().send("move it")
    first, second = (await pending(agent, answered_by="bob")).views[0], (await pending(agent)).views[0]
    first.forms[0].approve_button.click()
    await first.task
    second.forms[0].deny_button.click()  # answered elsewhere meanwhile: nothing runs, the form says so
    assert (await second.task) is None
    assert re.fullmatch(rf"Already answered \(approved by bob at {TIME}\)", second.outcome), second.outcome
    assert second.state == "stale" and "FAILED_PRECONDITION" not in html_of(second)
    assert ran == [(500.0, True, None)]


async def test_pending_counts_what_still_waits_after_each_answer(tmp_path: Path) -> None:
    store = nba.SqliteSessionStore(tmp_path / "s.db")
    agent, _ = bank(MOVE, MOVE, text_response("one"), text_response("two"), store=store)
    await agent.chat().send("one")
    await agent.chat().send("two")
    view = await pending(agent)
    assert view.headline() == "2 paused turns waiting for an answer"
    view.views[0].forms[0].approve_button.click()
    await view.views[0].task
    assert view.headline() == "1 paused turn waiting for an answer · 1 answered here"
    assert "1 answered here" in view.header.value


class Shown:
    """Stands in for IPython's DisplayHandle: records the bundles an output showed."""

    def __init__(self) -> None:
        self.bundles: list[dict[str, Any]] = []

    def update(self, bundle: dict[str, Any], **_kw: Any) -> None:
        self.bundles.append(bundle)


class Elsewhere:
    """An endpoint that is not the agent object itself (as a remote agent): it cannot fork."""

    def __init__(self, agent: nba.Agent) -> None:
        self.agent, self.name, self.tools = agent, agent.name, agent.tools

    async def invoke(self, *args: Any, **kwargs: Any) -> Any:
        return await self.agent.invoke(*args, **kwargs)

    async def get_snapshot(self, *args: Any, **kwargs: Any) -> Any:
        return await self.agent.get_snapshot(*args, **kwargs)

    async def abort(self, *args: Any, **kwargs: Any) -> Any:
        return await self.agent.abort(*args, **kwargs)


async def test_a_displayed_view_replaces_its_output_with_the_record_once_finished() -> None:
    agent, _ = bank(MOVE, text_response("Done."))
    res = await agent.chat().send("move it")
    view = TurnView(res, Chat(Elsewhere(agent), snapshot_id=res.snapshot_id), answered_by="ana")
    handle = Shown()
    view.__dict__["_nba_handles"] = [handle]  # what _ipython_display_ keeps in a kernel
    view.forms[0].approve_button.click()
    await view.task
    [record] = handle.bundles
    assert (
        WIDGET_MIME not in record
        and "Approved by ana" in record["text/html"]
        and "Done." in record["text/html"]
    )
    assert view.fork_panel is None


async def test_a_displayed_view_that_could_fork_still_leaves_its_record_alone_in_the_output() -> None:
    # a widget saved in a notebook reads "model not found" once its kernel is gone: an answered
    # turn is saved as its record whether or not the server extension runs
    agent, _ = bank(MOVE, text_response("Done."))
    view = TurnView(await agent.chat().send("move it"), answered_by="ana")
    handle = Shown()
    view.__dict__["_nba_handles"] = [handle]
    view.forms[0].approve_button.click()
    await view.task
    [record] = handle.bundles
    assert (
        WIDGET_MIME not in record
        and "Approved by ana" in record["text/html"]
        and "Done." in record["text/html"]
    )
    assert view.fork_panel is None and not view.offers_forks


async def test_a_displayed_view_shown_with_try_another_keeps_its_widget_and_shows_the_record() -> None:
    # "Try another answer" stays clickable, as a waiting form does; the record is in the output
    # beside the widget, which the server extension drops when the notebook is saved
    agent, _ = bank(MOVE, text_response("Done."))
    view = TurnView(await agent.chat().send("move it"), answered_by="ana", try_another=True)
    handle = Shown()
    view.__dict__["_nba_handles"] = [handle]
    view.forms[0].approve_button.click()
    await view.task
    [record] = handle.bundles
    assert (
        WIDGET_MIME in record and "Approved by ana" in record["text/html"] and "Done." in record["text/html"]
    )
    assert view.fork_panel is not None and view.fork_panel.button.description == "Try another answer"


async def test_a_view_inside_a_live_widget_offers_another_answer() -> None:
    agent, _ = bank(MOVE, text_response("Done."))
    view = TurnView(await agent.chat().send("move it"), answered_by="ana")  # not displayed in a cell
    view.forms[0].approve_button.click()
    await view.task
    assert view.offers_forks and view.fork_panel is not None


async def test_by_default_the_answerer_is_the_hub_user_or_the_local_user(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUPYTERHUB_USER", "ana")
    agent, _ = bank(MOVE, text_response("ok"))
    res = await agent.chat().send("move it")
    view = TurnView(res)
    view.forms[0].approve_button.click()
    await view.task
    # the person at this notebook reads "you"; the audit keeps their name
    assert view.outcome.startswith("Approved by you at"), view.outcome
    [record] = await agent.audit(res.session_id)  # type: ignore[arg-type]
    assert (record.answered_by, record.claimed_by) == ("ana", "ana")  # in-process: no principal to trust more
    monkeypatch.delenv("JUPYTERHUB_USER")
    import getpass

    assert TurnView(res).answered_by == getpass.getuser()
