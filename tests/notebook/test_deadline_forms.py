"""The form of a pause with a deadline: a countdown, then the record of what its default did.

(issue 15, item 2; issue 24, item 3)"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import ipywidgets as widgets
import pytest
from helpers import text_response, tool_call_response
from widget_helpers import html_of, widgets_of

import nb_agents as nba
from nb_agents.notebook import TurnView
from nb_agents.render.deadline import deadline_words
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def gated(store: nba.SessionStore | None = None, **deadline: object) -> nba.Agent:
    @nba.tool(name="transfer")
    async def transfer(amount: int) -> str:
        return "sent"

    model = ScriptedModel([tool_call_response(("transfer", "t1", {"amount": 500})), text_response("over")])
    gate = nba.middleware.ToolApproval(**deadline)  # type: ignore[arg-type]
    return nba.define_agent(
        "bank", model=model, tools=[transfer], store=store or nba.InMemorySessionStore(), use=[gate]
    )


async def test_the_form_ticks_its_deadline_and_its_record_says_it_escaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    evil = "<script>alert(1)</script> nobody approved"
    agent = gated(expires_in=timedelta(hours=1), on_expiry=evil)
    res = await agent.chat().send("pay")
    view = TurnView(res)
    form = view.forms[0]
    # the live line is a countdown the browser ticks (text set with textContent, never parsed)
    assert form.countdown is not None and form.countdown in form.children
    assert form.countdown.deadline == res.interrupts[0].part.metadata["expiresAt"]
    assert form.countdown.then == f'denied ("{evil}")'
    assert "Expires" not in html_of(form)  # the head leaves the deadline to the countdown
    # what a saved notebook keeps: the deadline as of its rendering, escaped
    shown = view._static_bundle()["text/html"]
    assert "Expires</span>" in shown and "in 59 min (at " in shown
    assert "then denied (&quot;&lt;script&gt;alert(1)&lt;/script&gt; nobody approved&quot;)" in shown
    assert "<script>" not in shown
    assert view.deadline_task is not None and not view.deadline_task.done()  # set for the deadline
    view.deadline_task.cancel()


def _expired_record(view: TurnView) -> str:
    assert view.state == "done", view.state
    shown = html_of(view)
    assert "Nobody answered in time: expired at " in shown and ", denied: too late" in shown
    assert view.outcome.startswith("Expired at ") and "transfer did not run" in view.outcome
    assert "over" in shown  # the turn the default ran: the model's reply
    assert not any(isinstance(w, widgets.Button) and w.layout.display != "none" for w in widgets_of(view))
    assert "FAILED_PRECONDITION" not in shown and "Waiting for" not in shown
    return shown


async def test_when_the_countdown_ends_the_form_becomes_the_record_of_its_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    agent = gated(expires_in=0.2, on_expiry="too late")
    res = await agent.chat().send("pay")
    view = TurnView(res)
    assert view.deadline_task is not None
    view.deadline_task.cancel()  # the browser's countdown tells the kernel here, not the timer
    await asyncio.sleep(0.4)
    assert view.state == "waiting"  # nothing read the session yet: the default is not applied
    form = view.forms[0]
    assert form.countdown is not None
    form.countdown.expire()  # what the browser sends when its countdown reaches the deadline
    for _ in range(50):
        if view.settled:
            break
        await asyncio.sleep(0.02)
    _expired_record(view)
    record = view._static_bundle()
    assert "Nobody answered in time" in record["text/html"] and "Expired" in record["text/plain"]
    [audit] = await agent.audit(res.session_id or "")
    assert audit.kind == "expired"


async def test_the_kernel_timer_applies_the_default_when_no_countdown_is_on_screen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    agent = gated(expires_in=0.3, on_expiry="too late")
    view = TurnView(await agent.chat().send("pay"))
    assert view.deadline_task is not None
    await view.deadline_task
    _expired_record(view)


class BlinkingStore(nba.InMemorySessionStore):
    """Fault injection: the session cannot be read for a moment (a disconnect, a locked file)."""

    failing = 0

    async def get_latest(self, session_id: str) -> nba.SessionSnapshot | None:
        if self.failing:
            self.failing -= 1
            raise OSError("the store is unreachable for a moment")
        return await super().get_latest(session_id)


async def test_the_kernel_timer_asks_again_when_the_session_could_not_be_read_at_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    store = BlinkingStore()
    agent = gated(store, expires_in=0.3, on_expiry="too late")
    view = TurnView(await agent.chat().send("pay"))
    store.failing = 2  # the first two asks after the deadline find the store away
    assert view.deadline_task is not None
    await asyncio.wait_for(view.deadline_task, 10)
    assert store.failing == 0
    _expired_record(view)


async def test_an_answer_after_the_deadline_shows_what_the_default_did_not_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    agent = gated(expires_in=0.2, on_expiry="too late")
    res = await agent.chat().send("pay")
    await asyncio.sleep(0.4)
    view = TurnView(res)
    assert view.deadline_task is not None
    view.deadline_task.cancel()
    view.forms[0].approve_button.click()  # too late: the engine applies the default and refuses it
    assert view.task is not None
    assert await view.task is None
    _expired_record(view)


async def test_an_approving_default_runs_the_tool_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    agent = gated(expires_in=0.2, on_expiry=nba.Expiry.approve())
    view = TurnView(await agent.chat().send("pay"))
    assert view.deadline_task is not None
    await view.deadline_task
    assert view.state == "done" and "transfer ran" in view.outcome, view.outcome
    assert "Nobody answered in time: expired at " in html_of(view) and "approved" in html_of(view)


def test_static_mode_shows_no_times(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NB_AGENTS_STATIC", "1")
    at = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()
    assert deadline_words(at, "approved") == "Deadline: if nobody answers in time, approved"


def test_the_audit_table_says_a_default_applied_on_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    from nb_agents.render.tables import audit_words

    monkeypatch.setenv("NB_AGENTS_STATIC", "1")
    mark = {"at": "2026-05-03T14:02:00.000Z", "applied": {"deny": "Too late."}}
    record = nba.AuditRecord("s", "p", "c", "transfer", "t1", "expired", mark, None, "2026-05-03T14:02:01Z")
    assert audit_words(record) == "expired, denied: Too late."
    approve = {**mark, "applied": {"approve": True}}
    approved = nba.AuditRecord(
        "s", "p", "c", "transfer", "t1", "expired", approve, None, "2026-05-03T14:02:01Z"
    )
    assert audit_words(approved) == "expired, approved"
    monkeypatch.delenv("NB_AGENTS_STATIC")
    assert audit_words(record).startswith("expired at ") and audit_words(record).endswith(
        ", denied: Too late."
    )
