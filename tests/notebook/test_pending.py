"""pending(): after a kernel restart, every waiting form comes back and resumes exactly once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from helpers import text_response, tool_call_response
from pydantic import BaseModel
from widget_helpers import html_of

import nb_agents as nba
from nb_agents.middleware import ToolApproval
from nb_agents.notebook import PendingView, apending, pending
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class Reply(BaseModel):
    approved: bool


class Transfer(BaseModel):
    to: str
    amount: int


PAY = tool_call_response(("payBill", "p1", {"amount": 5}))
MOVE = tool_call_response(("transfer", "t1", {"to": "amy", "amount": 7}))


def bank(db: Path, world: list[Any], *responses: dict[str, Any]) -> tuple[nba.Agent, ScriptedModel]:
    """A fresh agent object on the same database: what a restarted kernel builds."""

    @nba.tool(name="payBill")
    async def pay_bill(amount: int) -> str:
        world.append(("paid", amount))
        return "paid"

    @nba.resumable_tool(name="transfer", resume=Reply)
    async def transfer(inp: Transfer, reply: Reply | None) -> str:
        if reply is None:
            raise nba.Interrupt({"confirm": f"send {inp.amount} to {inp.to}"})
        world.append(("sent", inp.amount, reply.approved))
        return "sent"

    model = ScriptedModel(list(responses))
    store = nba.SqliteSessionStore(db)
    agent = nba.define_agent(
        "bank",
        model=model,
        tools=[pay_bill, transfer],
        store=store,
        use=[ToolApproval(allowed_tools=["transfer"])],
    )
    return agent, model


async def pause_one(db: Path, world: list[Any]) -> None:
    before, _ = bank(db, world, PAY)
    res = await before.chat().send("pay the bill")
    assert res.finish_reason == "interrupted"


async def test_forms_come_back_after_a_restart_and_run_the_tool_once(tmp_path: Path) -> None:
    db, world = tmp_path / "bank.db", []
    first, _ = bank(db, world, PAY, MOVE)
    assert (await first.chat().send("pay the bill")).finish_reason == "interrupted"
    assert (await first.chat().send("send amy 7")).finish_reason == "interrupted"
    del first  # the kernel restarts: only the database is left

    after, model = bank(db, world, text_response("Paid."), text_response("Sent."))
    view = await pending(after)
    assert isinstance(view, PendingView) and len(view.views) == 2
    pay_view, move_view = view.views
    assert pay_view.forms[0].mode == "hold" and move_view.forms[0].mode == "approve-restart"
    assert "2 paused turns" in html_of(view)
    pay_view.forms[0].approve_button.click()
    await pay_view.task
    move_view.forms[0].approve_button.click()
    await move_view.task
    assert world == [("paid", 5), ("sent", 7, True)]
    assert "Paid." in html_of(pay_view) and "Sent." in html_of(move_view) and model.calls == 2
    assert (await pending(after)).views == []


async def test_pending_from_a_cell_with_a_running_loop(tmp_path: Path) -> None:
    db, world = tmp_path / "bank.db", []
    await pause_one(db, world)
    after, _ = bank(db, world, text_response("Paid."))
    view = pending(after)  # a notebook cell runs inside the kernel's loop: the read is a task
    assert view.task is not None and view.views == []
    await view.task
    assert len(view.views) == 1
    view.views[0].forms[0].approve_button.click()
    await view.views[0].task
    assert world == [("paid", 5)]


async def test_pending_with_no_loop_running_reads_right_away(tmp_path: Path) -> None:
    db, world = tmp_path / "bank.db", []
    await pause_one(db, world)
    after, _ = bank(db, world, text_response("Paid."))
    view = await anyio.to_thread.run_sync(pending, after)  # a thread with no event loop
    assert view.task is None and len(view.views) == 1
    view.views[0].forms[0].approve_button.click()
    await view.views[0].task
    assert world == [("paid", 5)]


async def test_a_stale_form_never_runs_the_tool_twice(tmp_path: Path) -> None:
    db, world = tmp_path / "bank.db", []
    await pause_one(db, world)
    after, model = bank(db, world, text_response("Paid."))
    one, two, three = [(await pending(after)).views[0] for _ in range(3)]  # three cells, same turn

    one.forms[0].approve_button.click()
    one.forms[0].approve_button.click()  # a double click
    await one.task
    assert world == [("paid", 5)] and model.calls == 1

    two.forms[0].approve_button.click()  # a stale form: the same answer replays, nothing runs again
    assert (await two.task) is None and two.state == "stale"
    assert "Already answered (approved by" in two.outcome
    assert world == [("paid", 5)] and model.calls == 1

    three.forms[0].deny_button.click()  # a different answer: rejected, the form says who answered
    assert (await three.task) is None
    assert three.state == "stale" and three.settled
    assert three.header.value.count("Already answered (approved by ") == 1, three.header.value
    assert "FAILED_PRECONDITION" not in html_of(three) and three.forms[0].deny_button.disabled
    assert world == [("paid", 5)] and model.calls == 1


async def test_a_click_sends_at_once_and_reads_the_audit_only_to_say_who_answered(tmp_path: Path) -> None:
    db, world = tmp_path / "bank.db", []
    await pause_one(db, world)
    after, model = bank(db, world, text_response("Paid."))
    store = after.store
    assert store is not None
    reads: list[str] = []
    read_audit = store.audit

    async def audit(session_id: str) -> Any:  # the real store's audit, counted
        reads.append(session_id)
        return await read_audit(session_id)

    store.audit = audit  # type: ignore[method-assign]
    one, two = [(await pending(after)).views[0] for _ in range(2)]  # two cells, same turn

    one.forms[0].approve_button.click()  # the claim decides: nothing to read before it
    done = await one.task
    assert done is not None and done.text == "Paid." and world == [("paid", 5)]
    assert reads == []

    two.forms[0].approve_button.click()  # the same answer: it replays, then the audit says who
    assert (await two.task) is None and two.state == "stale"
    assert "Already answered (approved by" in two.outcome and len(reads) == 1
    assert world == [("paid", 5)] and model.calls == 1


async def test_the_same_answer_sent_after_it_failed_elsewhere_says_who_sent_it(tmp_path: Path) -> None:
    db, world = tmp_path / "bank.db", []
    await pause_one(db, world)
    runs: list[int] = []

    @nba.tool(name="payBill")
    async def pay_bill(amount: int) -> str:
        runs.append(amount)
        raise RuntimeError("the bank is closed")

    store = nba.SqliteSessionStore(db)
    after = nba.define_agent(
        "bank", model=ScriptedModel([]), tools=[pay_bill], store=store, use=[ToolApproval()]
    )
    one, two = [(await pending(after)).views[0] for _ in range(2)]
    one.forms[0].approve_button.click()
    assert (await one.task) is None and one.state == "failed" and runs == [5]  # it ran, then failed

    two.forms[0].approve_button.click()  # the same answer replays that failure: nothing runs again
    assert (await two.task) is None and two.state == "stale"
    assert "Already answered (approved by" in two.outcome and "bank is closed" not in html_of(two)
    assert runs == [5]


async def test_refresh_and_static_display(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db, world = tmp_path / "bank.db", []
    after, _ = bank(db, world)
    view = await pending(after)
    assert view.views == [] and "0 paused turns" in html_of(view)
    await pause_one(db, world)
    view.refresh_button.click()
    await view.task
    assert len(view.views) == 1
    assert "application/vnd.jupyter.widget-view+json" in view._repr_mimebundle_()
    monkeypatch.setenv("NB_AGENTS_STATIC", "1")
    bundle = view._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"} and "payBill" in bundle["text/html"]
    assert view.turns[0].snapshot_id not in bundle["text/html"] + bundle["text/plain"]


async def test_apending_still_works_but_says_it_is_deprecated() -> None:
    store = nba.InMemorySessionStore()
    agent = nba.define_agent("old", model=ScriptedModel([]), store=store)
    with pytest.warns(DeprecationWarning, match="await pending"):
        view = await apending(agent)
    assert isinstance(view, PendingView) and view.views == []
